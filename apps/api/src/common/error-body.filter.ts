import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { ERROR_CODES, type ErrorBody, type ErrorCode } from '@prospect/contract';
import type { FastifyReply } from 'fastify';
import { ApiException } from './api-exception.js';

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: ERROR_CODES.invalidRequest,
  401: ERROR_CODES.unauthorized,
  403: ERROR_CODES.forbidden,
  404: ERROR_CODES.notFound,
  405: ERROR_CODES.notFound,
  409: ERROR_CODES.conflict,
  413: ERROR_CODES.payloadTooLarge,
  415: ERROR_CODES.unsupportedMediaType,
  429: ERROR_CODES.tooManyRequests,
  503: ERROR_CODES.unavailable,
};

/** What fastify throws while reading a request (https://fastify.dev/docs/latest/Reference/Errors/). */
interface FastifyishError extends Error {
  code?: string;
}

/** Sentences for the errors fastify raises while reading a body, instead of its internals. */
const REQUEST_ERROR_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'The request body is not valid JSON.',
  FST_ERR_CTP_BODY_TOO_LARGE: 'The request body is too large.',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Unsupported Content-Type: send application/json.',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'The request body does not match its Content-Length.',
};

/**
 * Every non-2xx answer of the service has one body: `{statusCode, error, message}`.
 * Expected errors keep their status and code; anything else is logged and
 * becomes a 500 that reveals nothing of its cause.
 */
@Catch()
export class ErrorBodyFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const { body, headers } = this.toErrorBody(exception);
    if (reply.sent) return;
    reply.code(body.statusCode).headers(headers).type('application/json; charset=utf-8').send(body);
  }

  private toErrorBody(exception: unknown): { body: ErrorBody; headers: Record<string, string> } {
    if (exception instanceof ApiException) {
      return { body: { statusCode: exception.getStatus(), error: exception.code, message: exception.message }, headers: exception.headers };
    }
    if (exception instanceof HttpException) {
      // Nest wraps fastify's 4xx errors in an HttpException whose cause says what broke.
      const status = exception.getStatus();
      const cause = exception.cause as FastifyishError | undefined;
      const message = cause?.code?.startsWith('FST_') ? (REQUEST_ERROR_MESSAGES[cause.code] ?? 'The request could not be read.') : messageOf(exception);
      return { body: { statusCode: status, error: codeFor(status), message }, headers: {} };
    }
    this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    return {
      body: { statusCode: 500, error: ERROR_CODES.internal, message: 'Something went wrong on our side. Please try again.' },
      headers: {},
    };
  }
}

function codeFor(status: number): ErrorCode {
  return CODE_BY_STATUS[status] ?? (status >= 500 ? ERROR_CODES.internal : ERROR_CODES.invalidRequest);
}

/** Nest's built-in exceptions carry their message as a string or an array. */
function messageOf(exception: HttpException): string {
  const res = exception.getResponse();
  if (typeof res === 'string') return res;
  const message = (res as { message?: unknown }).message;
  if (Array.isArray(message)) return message.join('; ');
  if (typeof message === 'string') return message;
  return exception.message;
}
