import type { NextFunction, Request, Response } from 'express';
import { badRequest } from './api-exception.js';

/** NUL, which Postgres cannot store in text, and UTF-16 surrogates without their pair, which are not text at all. */
const isMalformed = (text: string) => text.includes('\u0000') || !text.isWellFormed();

/**
 * The path (`clientName`, `user.name`, `tags.2`) of the first string in `value` that
 * cannot be stored as text, or null. Checked before anything is validated or written,
 * so such input is a 400 naming the field, never a 500 from the database (or a row
 * written without its audit event, whose JSON refused it).
 */
export function findMalformedText(value: unknown, path: string[] = []): string | null {
  if (typeof value === 'string') return isMalformed(value) ? path.join('.') || 'body' : null;
  if (value === null || typeof value !== 'object') return null;
  for (const [key, item] of Object.entries(value)) {
    if (isMalformed(key)) return [...path, '(a field name)'].join('.');
    const found = findMalformedText(item, [...path, key]);
    if (found) return found;
  }
  return null;
}

export const malformedTextMessage = (field: string) => `Invalid ${field}: it contains a NUL character or broken Unicode (an unpaired surrogate).`;

/** Express middleware: a form field (or query parameter) that cannot be stored as text is a 400 naming it, before any handler runs. */
export function refuseMalformedForms(req: Request, _res: Response, next: NextFunction): void {
  const malformed = findMalformedText(req.body) ?? findMalformedText(req.query);
  next(malformed ? badRequest(malformedTextMessage(malformed)) : undefined);
}
