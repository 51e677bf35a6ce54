import type { Request } from 'express';

/**
 * One cookie's value from the Cookie header, or null. Express parses no cookies of its own, and
 * the pages read only two besides the session's (the device cookie, the anonymous CSRF cookie),
 * so a cookie parser on every request would be work for nothing. Their values are base64url:
 * nothing to decode.
 */
export function readCookie(req: Request, name: string): string | null {
  for (const pair of (req.headers.cookie ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return null;
}
