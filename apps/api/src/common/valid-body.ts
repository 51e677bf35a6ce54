import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { safeParse, type $ZodIssue, type $ZodType, type output } from 'zod/v4/core';
import { badRequest } from './api-exception.js';

/**
 * A request body checked against a contract schema. Unknown fields, wrong types and missing
 * fields are a 400 naming the first problem. (Text that cannot be stored, and nesting past the
 * limit, were refused before any route ran: well-formed-text.ts, after each body parser.)
 */
export function validBody<S extends $ZodType>(schema: S, value: unknown): output<S> {
  // No body at all is an empty object for schemas whose fields are all optional.
  const input = value === undefined || value === null || value === '' ? {} : value;
  // reportInput: zod leaves the offending value out of an issue otherwise, and a wrong type would read as missing.
  const parsed = safeParse(schema, input, { reportInput: true });
  if (parsed.success) return parsed.data;
  throw badRequest(describeIssue(parsed.error.issues[0]!));
}

/**
 * `@ValidBody(Schema) body: T`: the handler's body, checked by validBody. A parameter decorator
 * rather than a pipe (`@Body(pipe)`), for the same check at less cost (issue #35): Nest runs a
 * pipe through four nested async calls and a Promise.all on every request, and a decorator's
 * value synchronously. (The schema travels wrapped, under a key of its own: Nest would take a bare zod
 * schema, which has a `transform` method, for a pipe, and `{ schema }` for its own options.)
 */
export const ValidBody = (schema: $ZodType): ParameterDecorator => bodyOf({ bodySchema: schema });

const bodyOf = createParamDecorator((data: { bodySchema: $ZodType }, context: ExecutionContext) =>
  validBody(data.bodySchema, context.switchToHttp().getRequest<Request>().body),
);

/** What a type is called in a sentence: "`deviceCode` must be a string". */
const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'a list',
};

function describeIssue(issue: $ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `Unknown field: ${issue.keys.join(', ')}.`;
  const field = issue.path.length ? issue.path.join('.') : 'body';
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return `Missing field: ${field}.`;
    const expected = TYPE_NAMES[issue.expected];
    if (expected) return `${field === 'body' ? 'The body' : field} must be ${expected}.`;
  }
  return `Invalid ${field}: ${issue.message}.`;
}
