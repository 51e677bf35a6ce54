import { type PipeTransform } from '@nestjs/common';
import { safeParse, type $ZodIssue, type $ZodType, type output } from 'zod/v4/core';
import { badRequest } from './api-exception.js';
import { findMalformedText, malformedTextMessage } from './well-formed-text.js';

/**
 * Validates a request body against a contract schema. Unknown fields, wrong
 * types and missing fields are a 400 naming the first problem.
 */
export class ZodBodyPipe<S extends $ZodType> implements PipeTransform<unknown, output<S>> {
  constructor(private readonly schema: S) {}

  transform(value: unknown): output<S> {
    // No body at all is an empty object for schemas whose fields are all optional.
    const input = value === undefined || value === null || value === '' ? {} : value;
    const malformed = findMalformedText(input);
    if (malformed) throw badRequest(malformedTextMessage(malformed));
    const parsed = safeParse(this.schema, input);
    if (parsed.success) return parsed.data;
    throw badRequest(describeIssue(parsed.error.issues[0]!));
  }
}

function describeIssue(issue: $ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `Unknown field: ${issue.keys.join(', ')}.`;
  const field = issue.path.length ? issue.path.join('.') : 'body';
  if (issue.code === 'invalid_type' && issue.input === undefined) return `Missing field: ${field}.`;
  return `Invalid ${field}: ${issue.message}.`;
}
