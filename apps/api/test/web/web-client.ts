import supertest from 'supertest';
import type { TestApp } from '../support/test-app.js';

/** A browser without the browser: a supertest agent keeps the cookies between requests. */
export function webClient(api: TestApp) {
  const agent = supertest.agent(api.app.getHttpServer());
  /** A repeated field (checkboxes) is an array, sent as a browser sends it: the name once per value. */
  const send = async (method: 'GET' | 'POST', path: string, form?: Record<string, string | string[]>, headers: Record<string, string> = {}) => {
    const encoded = new URLSearchParams(Object.entries(form ?? {}).flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((v): [string, string] => [name, v]))).toString();
    const req = method === 'GET' ? agent.get(path) : agent.post(path).type('form').send(encoded);
    const res = await req.set(headers).redirects(0);
    return { status: res.status, location: res.headers.location as string | undefined, text: res.text, headers: res.headers };
  };
  const csrfFrom = (text: string) => /name="_csrf" value="([^"]+)"/.exec(text)?.[1] ?? '';
  return { agent, send, csrfFrom };
}

export type WebClient = ReturnType<typeof webClient>;

/** Signs in through the sign-in form as a person who already has an account. */
export async function signInAs(api: TestApp, email: string, password: string): Promise<WebClient> {
  const web = webClient(api);
  const form = await web.send('GET', '/login');
  const res = await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email, password });
  expect(res.status).toBe(303);
  return web;
}
