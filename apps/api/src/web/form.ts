import type { Request } from 'express';

/** A form field as a string; missing, repeated or non-string values read as ''. */
export function field(req: Request, name: string): string {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** A query-string parameter as a string; missing or repeated ones read as ''. */
export function queryParam(req: Request, name: string): string {
  const value = (req.query as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : '';
}

/** Where to go after sign-in: only a same-site path ("/x", never "//host" or "/\\host"). */
export function safeNext(value: string): string {
  return /^\/(?![/\\])/.test(value) && value.length < 500 ? value : '/settings/tokens';
}
