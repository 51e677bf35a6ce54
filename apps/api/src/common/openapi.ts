import { ApiBody, ApiConsumes, ApiResponse } from '@nestjs/swagger';
import { ErrorBodySchema } from '@prospect/contract';
import { applyDecorators } from '@nestjs/common';
import { toJSONSchema, type $ZodType } from 'zod/v4/core';

type SchemaObject = Record<string, unknown>;

/** The contract's zod schema as an OpenAPI schema, so the docs can't drift from validation. */
export function openApiSchema(schema: $ZodType): SchemaObject {
  const json = toJSONSchema(schema, { target: 'openapi-3.0', unrepresentable: 'any' }) as SchemaObject;
  delete json.$schema;
  return json;
}

export const ApiJsonBody = (schema: $ZodType, required = true) =>
  ApiBody({ schema: openApiSchema(schema) as never, required });

/** A form-encoded body (the OAuth endpoints, as RFC 6749 asks). */
export const ApiFormBody = (schema: $ZodType) =>
  applyDecorators(ApiConsumes('application/x-www-form-urlencoded'), ApiBody({ schema: openApiSchema(schema) as never, required: true }));

export const ApiJsonResponse = (status: number, description: string, schema?: $ZodType) =>
  ApiResponse({ status, description, ...(schema ? { schema: openApiSchema(schema) as never } : {}) });

/** Documents error statuses with the one error body. */
export const ApiErrors = (...statuses: Array<[number, string]>) =>
  applyDecorators(...statuses.map(([status, description]) => ApiJsonResponse(status, description, ErrorBodySchema)));
