import type { NextFunction, Request, Response } from 'express';
import { badRequest } from './api-exception.js';

/** How deeply a request's JSON may nest. Our bodies are flat objects; this leaves room and no more. */
export const MAX_INPUT_DEPTH = 32;

/** NUL, which Postgres cannot store in text, and UTF-16 surrogates without their pair, which are not text at all. */
const isMalformed = (text: string) => text.includes('\u0000') || !text.isWellFormed();

export const malformedTextMessage = (field: string) => `Invalid ${field}: it contains a NUL character or broken Unicode (an unpaired surrogate).`;
export const tooDeepMessage = `The request body nests more than ${MAX_INPUT_DEPTH} levels deep.`;

/** An object or array still to be looked into, and how it was reached: a field path is built only for what is reported. */
interface Container {
  value: object;
  depth: number;
  key: string | number;
  parent?: Container;
}

/**
 * What makes a request's value (a parsed JSON body, a form, a query) unreadable, as the
 * sentence of a 400, or null: nesting deeper than MAX_INPUT_DEPTH, or a string or field
 * name that cannot be stored as text, named by its path (`clientName`, `user.name`,
 * `tags.2`). Checked before anything is validated or written, so such input is a 400,
 * never a 500 from the database (or a row written without its audit event, whose JSON
 * refused it).
 *
 * Walked with a stack of its own, not recursion, looking at each value once and into no
 * container deeper than the limit: a 16 KiB body of 8,000 nested arrays costs 33 steps,
 * a wide one a step per value.
 */
export function findUnreadableInput(value: unknown): string | null {
  if (typeof value === 'string') return isMalformed(value) ? malformedTextMessage('body') : null;
  if (value === null || typeof value !== 'object') return null;
  const stack: Container[] = [{ value, depth: 0, key: 'body' }];
  for (let container = stack.pop(); container; container = stack.pop()) {
    if (container.depth === MAX_INPUT_DEPTH) return tooDeepMessage;
    // An array by index: its keys as strings would cost more than the walk itself.
    const keys = Array.isArray(container.value) ? undefined : Object.keys(container.value);
    const count = keys ? keys.length : (container.value as unknown[]).length;
    for (let i = 0; i < count; i++) {
      const key = keys ? keys[i]! : i;
      if (typeof key === 'string' && isMalformed(key)) return malformedTextMessage(pathOf(container, '(a field name)'));
      const item: unknown = (container.value as Record<string | number, unknown>)[key];
      if (typeof item === 'string') {
        if (isMalformed(item)) return malformedTextMessage(pathOf(container, key));
      } else if (item !== null && typeof item === 'object') {
        stack.push({ value: item, depth: container.depth + 1, key, parent: container });
      }
    }
  }
  return null;
}

/** `user.name`, `tags.2`: the path to `key` of `container`. */
function pathOf(container: Container, key: string | number): string {
  const keys = [key];
  for (let at: Container | undefined = container; at.parent; at = at.parent) keys.push(at.key);
  return keys.reverse().join('.');
}

/** Express middleware after the JSON parser: an unreadable body is a 400 before any route (or none) runs. */
export function refuseUnreadableBodies(req: Request, _res: Response, next: NextFunction): void {
  const problem = findUnreadableInput(req.body);
  next(problem ? badRequest(problem) : undefined);
}

/** At most this much of a parameter's name is repeated in the sentence that refuses it. */
const MAX_NAMED_PARAMETER = 64;

export const malformedQueryMessage = (parameter: string) =>
  `Invalid ${parameter}: it contains a NUL character or broken Unicode (percent-encoded bytes that are not UTF-8).`;

/**
 * `escaped` (a query parameter's name or value) as text, or null when its percent-encoded
 * bytes hold NUL or are not UTF-8 (`%FF`, an overlong `%C0%80`, a surrogate's `%ED%A0%80`).
 * A `%` not followed by two hex digits stands for itself, as Express reads it. Express's
 * query parser turns bad bytes into U+FFFD and keeps a NUL, so this looks at the bytes.
 */
function decodedText(escaped: string): string | null {
  try {
    const text = decodeURIComponent(escaped.replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
    return isMalformed(text) ? null : text;
  } catch {
    // decodeURIComponent refuses any byte sequence that is not UTF-8.
    return null;
  }
}

/**
 * What makes a request target's query string (`req.url`) unreadable, as the sentence of a
 * 400, or null: a parameter whose name or value, percent-decoded, holds NUL or bytes that are
 * not UTF-8, named (`Invalid q: …`). Node refuses a raw NUL or non-ASCII byte in the request
 * line itself, so only a `%` escape carries one: a query without `%` costs one scan. (The
 * path is left to the routes: a NUL in an id there finds nothing, a 404.)
 */
export function findMalformedQuery(url: string): string | null {
  const queryAt = url.indexOf('?');
  if (queryAt < 0 || !url.includes('%', queryAt)) return null;
  for (const pair of url.slice(queryAt + 1).split('&')) {
    if (!pair.includes('%')) continue;
    const equals = pair.indexOf('=');
    // `+` is a space in a query (application/x-www-form-urlencoded).
    const name = decodedText((equals < 0 ? pair : pair.slice(0, equals)).replaceAll('+', ' '));
    if (name === null) return malformedQueryMessage('(a parameter name)');
    if (equals >= 0 && decodedText(pair.slice(equals + 1)) === null) return malformedQueryMessage(Array.from(name).slice(0, MAX_NAMED_PARAMETER).join(''));
  }
  return null;
}

/**
 * Express middleware for every request, before any route, page or body parser: a query
 * parameter that cannot be stored as text (findMalformedQuery) is a 400, so no route, today's
 * or a later one, hands a NUL to Postgres (a 500) or reads bad bytes as U+FFFD.
 */
export function refuseMalformedQueries(req: Request, _res: Response, next: NextFunction): void {
  const problem = findMalformedQuery(req.originalUrl);
  next(problem ? badRequest(problem) : undefined);
}

/** Express middleware after a form parser: a form field (or query parameter) that cannot be stored as text is a 400 naming it, before any handler runs. */
export function refuseMalformedForms(req: Request, _res: Response, next: NextFunction): void {
  const problem = findUnreadableInput(req.body) ?? findUnreadableInput(req.query);
  next(problem ? badRequest(problem) : undefined);
}
