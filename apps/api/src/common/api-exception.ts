import { HttpException } from '@nestjs/common';
import { ERROR_CODES, type ErrorCode } from '@prospect/contract';

/**
 * An expected failure with a stable machine code and a sentence for a person.
 * Services throw these; the exception filter turns them into the error body.
 */
export class ApiException extends HttpException {
  constructor(
    status: number,
    readonly code: ErrorCode,
    message: string,
    /** Extra response headers, e.g. WWW-Authenticate or Retry-After. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message, status);
  }
}

export const badRequest = (message: string) => new ApiException(400, ERROR_CODES.invalidRequest, message);
export const notFound = (message: string) => new ApiException(404, ERROR_CODES.notFound, message);
export const forbidden = (message: string) => new ApiException(403, ERROR_CODES.forbidden, message);
export const conflict = (message: string) => new ApiException(409, ERROR_CODES.conflict, message);
