import type { Server } from 'node:http';
import supertest from 'supertest';

/** Where requests go: an app in this process (its HTTP server), or the base URL of a spawned one. */
export type Target = { app: { getHttpServer(): Server } } | string;

/** supertest for a target: in process through `request(app.getHttpServer())`, else `request(baseUrl)`. */
export const client = (target: Target) => supertest(typeof target === 'string' ? target : target.app.getHttpServer());

/** A response read in full, for assertions on status, headers and body together. */
export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** One request through supertest, its answer with `Headers` (so tests read `headers.get(name)`) and the parsed body. */
export async function request<T = any>(
  target: Target,
  method: string,
  path: string,
  options: { json?: unknown; body?: string; token?: string; headers?: Record<string, string> } = {},
): Promise<JsonResponse<T>> {
  let req = client(target)[method.toLowerCase() as 'get'](path).set(options.headers ?? {});
  if (options.token !== undefined) req = req.set('authorization', `Bearer ${options.token}`);
  if (options.json !== undefined) req = req.set('content-type', 'application/json').send(JSON.stringify(options.json));
  else if (options.body !== undefined) req = req.send(options.body);
  // Keep the raw text: superagent parses only what it knows, and a test may want to show what came back.
  const res = await req.buffer(true).parse((response, done) => {
    let text = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => (text += chunk));
    response.on('end', () => done(null, text));
  });
  const text = res.body as string;
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers as Record<string, string | string[]>)) {
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return { status: res.status, headers, body: body as T };
}

export const post = <T = any>(target: Target, path: string, json?: unknown, token?: string) => request<T>(target, 'POST', path, { json, token });
export const get = <T = any>(target: Target, path: string, token?: string) => request<T>(target, 'GET', path, { token });

/** The error body every failure must have. */
export const errorBody = (statusCode: number, error: string) => ({ statusCode, error, message: expect.any(String) });
