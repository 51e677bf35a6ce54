import { ApiBody, ApiResponse } from '@nestjs/swagger';
import { ErrorBodySchema } from '@prospect/contract';
import { applyDecorators } from '@nestjs/common';
import { z } from 'zod';

type SchemaObject = Record<string, unknown>;

/** The contract's zod schema as an OpenAPI schema, so the docs can't drift from validation. */
export function openApiSchema(schema: z.ZodType): SchemaObject {
  const json = z.toJSONSchema(schema, { target: 'openapi-3.0', unrepresentable: 'any' }) as SchemaObject;
  delete json.$schema;
  return json;
}

export const ApiJsonBody = (schema: z.ZodType, required = true) =>
  ApiBody({ schema: openApiSchema(schema) as never, required });

export const ApiJsonResponse = (status: number, description: string, schema?: z.ZodType) =>
  ApiResponse({ status, description, ...(schema ? { schema: openApiSchema(schema) as never } : {}) });

/** Documents error statuses with the one error body. */
export const ApiErrors = (...statuses: Array<[number, string]>) =>
  applyDecorators(...statuses.map(([status, description]) => ApiJsonResponse(status, description, ErrorBodySchema)));
