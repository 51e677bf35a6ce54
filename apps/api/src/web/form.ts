import { hasUnsafeText } from '@prospect/contract';
import type { Request } from 'express';

/** A form field as a string; missing, repeated or non-string values read as ''. */
export function field(req: Request, name: string): string {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** A plausible e-mail address (sign-up, password reset): a typo is named rather than mailed to nobody. */
export { looksLikeEmail } from '@prospect/contract';

/** A field that may repeat (checkboxes of one name): its string values, in order; anything else is dropped. */
export function fields(req: Request, name: string): string[] {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  const values = Array.isArray(value) ? value : [value];
  return values.filter((v): v is string => typeof v === 'string');
}

/** A query-string parameter as a string; missing or repeated ones read as ''. */
export function queryParam(req: Request, name: string): string {
  const value = (req.query as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : '';
}

const AFTER_SIGN_IN = '/settings/tokens';

/**
 * Where to go after sign-in: `next` read as an address relative to this site, kept only
 * when it stays on this site, answered as its path and query. Control characters are
 * refused outright (browsers drop a tab or newline, turning `/\t/evil.example` into
 * `//evil.example`), and so are backslashes (read as slashes), so `//host`, `/\host`,
 * `/\t/host` and their encodings all land on the default page.
 */
export function safeNext(value: string, publicUrl: string): string {
  if (!value.startsWith('/') || value.length > 500 || hasUnsafeText(value) || value.includes('\\')) return AFTER_SIGN_IN;
  const site = new URL(publicUrl);
  let target: URL;
  try {
    target = new URL(value, site);
  } catch {
    return AFTER_SIGN_IN;
  }
  // `/.//host` resolves on our origin to the path `//host`, which a browser reads as another host.
  return target.origin === site.origin && !target.pathname.startsWith('//') ? target.pathname + target.search : AFTER_SIGN_IN;
}

/** The `page` of a paged list (from 1): anything else, or nothing, is the first page. */
export function pageParam(req: Request): number {
  const page = Number(queryParam(req, 'page'));
  return Number.isInteger(page) && page >= 1 && page <= 10_000 ? page : 1;
}

/** "15 minutes", "40 seconds": how long a person must wait (a 429's Retry-After, in words). */
export const waitText = (seconds: number) => (seconds >= 90 ? `${Math.ceil(seconds / 60)} minutes` : `${seconds} seconds`);
