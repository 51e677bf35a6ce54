/** A response read in full, for assertions on status, headers and body together. */
export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export async function request<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: { json?: unknown; body?: string; token?: string; headers?: Record<string, string> } = {},
): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.json !== undefined) headers['content-type'] = 'application/json';
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const res = await fetch(baseUrl + path, {
    method,
    headers,
    body: options.json !== undefined ? JSON.stringify(options.json) : options.body,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text, so a test can show what came back
  }
  return { status: res.status, headers: res.headers, body: body as T };
}

export const post = <T = any>(baseUrl: string, path: string, json?: unknown, token?: string) =>
  request<T>(baseUrl, 'POST', path, { json, token });
export const get = <T = any>(baseUrl: string, path: string, token?: string) => request<T>(baseUrl, 'GET', path, { token });

/** The error body every failure must have. */
export const errorBody = (statusCode: number, error: string) => ({ statusCode, error, message: expect.any(String) });
