import supertest from 'supertest';
import type { Target } from './http.js';
import type { TestApp } from './test-app.js';

/** The CSRF token of the form in a page (empty when the page holds none, so the post is refused as it would be). */
export const csrfFrom = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';

/** A browser without the browser: a supertest agent keeps the cookies between requests. On an app in this process, or a spawned one's base URL. */
export function webClient(target: Target) {
  const agent = supertest.agent(typeof target === 'string' ? target : target.app.getHttpServer());
  /** A repeated field (checkboxes) is an array, sent as a browser sends it: the name once per value. */
  const send = async (method: 'GET' | 'POST', path: string, form?: Record<string, string | string[]>, headers: Record<string, string> = {}) => {
    const encoded = new URLSearchParams(Object.entries(form ?? {}).flatMap(([name, value]) => (Array.isArray(value) ? value : [value]).map((v): [string, string] => [name, v]))).toString();
    const req = method === 'GET' ? agent.get(path) : agent.post(path).type('form').send(encoded);
    const res = await req.set(headers).redirects(0);
    return { status: res.status, location: res.headers.location as string | undefined, text: res.text, headers: res.headers };
  };
  return { agent, send, csrfFrom };
}

export type WebClient = ReturnType<typeof webClient>;
export type WebResponse = Awaited<ReturnType<WebClient['send']>>;

/** Opens a page, then posts `form` to `path` with the page's CSRF token, as its form does. */
export async function postFrom(web: WebClient, page: string, path: string, form: Record<string, string | string[]> = {}): Promise<WebResponse> {
  const text = (await web.send('GET', page)).text;
  return web.send('POST', path, { _csrf: csrfFrom(text), ...form });
}

/** Fills in the sign-up form (at `page`, e.g. with a setup code or `next`); the form's answer. */
export const signUp = (web: WebClient, fields: { name: string; email: string; password: string } & Record<string, string>, page = '/signup') =>
  postFrom(web, page, '/signup', fields);

/** Fills in the sign-in form in `web` (with `extra` fields such as `next`); the form's answer. */
export const signIn = (web: WebClient, email: string, password: string, extra: Record<string, string> = {}) => postFrom(web, '/login', '/login', { email, password, ...extra });

/** Signs in through the sign-in form as a person who already has an account. */
export async function signInAs(api: TestApp, email: string, password: string): Promise<WebClient> {
  const web = webClient(api);
  const res = await signIn(web, email, password);
  expect(res.status).toBe(303);
  return web;
}
