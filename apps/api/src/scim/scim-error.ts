import { ERROR_CODES, type ErrorCode } from '@prospect/contract';
import { ApiException } from '../common/api-exception.js';

/** RFC 7644 §3.12's `scimType` values this service answers with. */
export type ScimType = 'invalidFilter' | 'invalidSyntax' | 'invalidValue' | 'invalidPath' | 'noTarget' | 'mutability' | 'uniqueness' | 'tooMany';

const CODES: Record<number, ErrorCode> = {
  400: ERROR_CODES.invalidRequest,
  401: ERROR_CODES.unauthorized,
  403: ERROR_CODES.forbidden,
  404: ERROR_CODES.notFound,
  409: ERROR_CODES.conflict,
};

/**
 * A refusal of a SCIM request: common/'s error filter writes it as SCIM's error body
 * (`{schemas: [urn:ietf:params:scim:api:messages:2.0:Error], status: "400", scimType, detail}`) for
 * every path under /scim/, reading `scimType` from here.
 */
export class ScimError extends ApiException {
  constructor(
    status: number,
    readonly scimType: ScimType | undefined,
    detail: string,
    headers: Record<string, string> = {},
  ) {
    super(status, CODES[status] ?? ERROR_CODES.invalidRequest, detail, headers);
  }
}

export const invalidValue = (detail: string) => new ScimError(400, 'invalidValue', detail);
export const invalidSyntax = (detail: string) => new ScimError(400, 'invalidSyntax', detail);
export const invalidFilter = (detail: string) => new ScimError(400, 'invalidFilter', detail);
export const mutability = (status: 400 | 409, detail: string) => new ScimError(status, 'mutability', detail);
export const uniqueness = (detail: string) => new ScimError(409, 'uniqueness', detail);
export const scimNotFound = (what: string, id: string) => new ScimError(404, undefined, `No ${what} with the id ${id} in this organization.`);
