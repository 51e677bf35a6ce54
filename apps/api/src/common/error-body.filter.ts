import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger, NotFoundException } from '@nestjs/common';
import { ERROR_CODES, type ErrorBody, type ErrorCode } from '@prospect/contract';
import type { Request, Response } from 'express';
import { type DatabaseAvailability, isDatabaseUnavailable } from '../database/database-availability.js';
import { ApiException } from './api-exception.js';
import { API_PREFIX, SCIM_MEDIA_TYPE, SCIM_PREFIX } from './http-body.js';

const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: ERROR_CODES.invalidRequest,
  401: ERROR_CODES.unauthorized,
  403: ERROR_CODES.forbidden,
  404: ERROR_CODES.notFound,
  405: ERROR_CODES.methodNotAllowed,
  409: ERROR_CODES.conflict,
  413: ERROR_CODES.payloadTooLarge,
  415: ERROR_CODES.unsupportedMediaType,
  429: ERROR_CODES.tooManyRequests,
  503: ERROR_CODES.unavailable,
};

/** What Express's body parsers (and http-errors in general) throw: an Error with a status and a `type`. */
interface HttpishError extends Error {
  status?: number;
  statusCode?: number;
  type?: string;
}

/** Sentences for the errors Express's body parsers raise, instead of their internals. */
const BODY_PARSER_MESSAGES: Record<string, string> = {
  'entity.parse.failed': 'The request body is not valid JSON.',
  'entity.too.large': 'The request body is too large.',
  'entity.verify.failed': 'The request body could not be read.',
  'encoding.unsupported': 'The request body has an unsupported encoding.',
  'charset.unsupported': 'The request body has an unsupported charset.',
  'request.aborted': 'The request was aborted.',
  'request.size.invalid': 'The request body does not match its Content-Length.',
  'parameters.too.many': 'The request body has too many fields.',
};

/** Seconds a client is told to wait before trying again while the database is unavailable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** What a browser is shown for an error, by status. */
const PAGE_HEADINGS: Record<number, string> = {
  404: 'Page not found',
  503: 'Prospect is unavailable for a moment',
  500: 'Something went wrong',
};

/**
 * Every non-2xx answer of the service has one body: `{statusCode, error, message}`;
 * a browser asking for a page gets the same as a page. Expected errors keep their
 * status and code; a database that is gone or frozen is a 503 with Retry-After (said
 * once in the log, not per request); anything else is logged and becomes a 500 that
 * reveals nothing of its cause.
 */
@Catch()
export class ErrorBodyFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  constructor(private readonly database: DatabaseAvailability) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<Request>();
    const response = host.switchToHttp().getResponse<Response>();
    const allowed = exception instanceof NotFoundException && !(exception instanceof ApiException) ? allowedMethods(request) : [];
    const { body, headers } = allowed.length
      ? {
          body: { statusCode: 405, error: ERROR_CODES.methodNotAllowed, message: `${request.method} is not allowed here; use ${allowed.join(' or ')}.` },
          headers: { Allow: allowed.join(', ') },
        }
      : this.toErrorBody(exception);
    if (response.headersSent) return;
    response.status(body.statusCode).set(headers);
    if (isOAuth(request)) {
      // RFC 6749 §5.2: `error` and `error_description`, never cached.
      response.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' }).json({ ...body, error_description: body.message });
      return;
    }
    if (isScim(request)) {
      // RFC 7644 §3.12: SCIM's error body, whoever asks; `scimType` from the exception (scim/'s), or for a body that is not JSON.
      const scimType = scimTypeOf(exception) ?? (body.message === BODY_PARSER_MESSAGES['entity.parse.failed'] ? 'invalidSyntax' : undefined);
      response.type(SCIM_MEDIA_TYPE).send(JSON.stringify({ schemas: [SCIM_ERROR_SCHEMA], status: String(body.statusCode), ...(scimType ? { scimType } : {}), detail: body.message }));
      return;
    }
    if (!wantsPage(request)) {
      response.json(body);
      return;
    }
    const heading = PAGE_HEADINGS[body.statusCode] ?? (body.statusCode >= 500 ? PAGE_HEADINGS[500]! : 'That did not work');
    const message = body.statusCode === 404 ? 'There is no page at this address.' : body.message;
    response.render('error', { title: heading, heading, message }, (err: Error | null, html: string) =>
      err ? response.json(body) : response.type('html').send(html),
    );
  }

  toErrorBody(exception: unknown): { body: ErrorBody; headers: Record<string, string> } {
    if (isDatabaseUnavailable(exception)) {
      this.database.report(exception);
      return {
        body: { statusCode: 503, error: ERROR_CODES.unavailable, message: 'The service is briefly unavailable. Please try again in a few seconds.' },
        headers: { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
      };
    }
    if (exception instanceof ApiException) {
      return { body: { statusCode: exception.getStatus(), error: exception.code, message: exception.message }, headers: exception.headers };
    }
    // Nest wraps what a body parser threw in an HttpException whose cause says what broke.
    const err = (exception instanceof HttpException ? (exception.cause ?? exception) : exception) as HttpishError | undefined;
    if (exception instanceof HttpException && !err?.type) {
      const status = exception.getStatus();
      return { body: { statusCode: status, error: codeFor(status), message: messageOf(exception) }, headers: {} };
    }
    const status = err?.status ?? err?.statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      const message = (err?.type && BODY_PARSER_MESSAGES[err.type]) ?? 'The request could not be read.';
      return { body: { statusCode: status, error: codeFor(status), message }, headers: {} };
    }
    this.logger.error(err instanceof Error ? (err.stack ?? err.message) : String(exception));
    return {
      body: { statusCode: 500, error: ERROR_CODES.internal, message: 'Something went wrong on our side. Please try again.' },
      headers: {},
    };
  }
}

/**
 * The methods the router has for this path, when the request's own has no route: a 405
 * with `Allow` rather than a 404 for a path that exists. Express answers neither itself.
 */
function allowedMethods(req: Request): string[] {
  const stack = (req.app as unknown as { router?: { stack: RouteLayer[] } }).router?.stack ?? [];
  const methods = new Set<string>();
  for (const layer of stack) {
    if (!layer.route || !layer.match(req.path)) continue;
    const verbs = Object.entries(layer.route.methods).filter(([method, on]) => on && method !== '_all');
    // A middleware mounted for every method (Nest's RequestMethod.ALL) says nothing about what the path allows.
    if (verbs.length > 8) continue;
    for (const [method] of verbs) methods.add(method.toUpperCase());
  }
  if (methods.has('GET')) methods.add('HEAD');
  return methods.size > 0 && !methods.has(req.method) ? [...methods].sort() : [];
}

interface RouteLayer {
  route?: { methods: Record<string, boolean> };
  match(path: string): boolean;
}

/** SCIM's error message schema (RFC 7644 §3.12). */
const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** SCIM provisioning (scim/), whose errors are RFC 7644's body whoever asks. */
const isScim = (req: Request) => req.originalUrl.startsWith(SCIM_PREFIX);

/** The `scimType` an exception of scim/ carries (ScimError), read by its shape: common/ imports no feature. */
function scimTypeOf(exception: unknown): string | undefined {
  const scimType = (exception as { scimType?: unknown } | null)?.scimType;
  return typeof scimType === 'string' ? scimType : undefined;
}

/** The OAuth 2.0 surface, whose errors are RFC 6749's JSON whoever asks. */
const isOAuth = (req: Request) => req.originalUrl.startsWith('/oauth/') || req.originalUrl.startsWith('/.well-known/');

/** A browser navigating to a page, rather than an API client: outside /api and OAuth, preferring HTML. */
function wantsPage(req: Request): boolean {
  return !req.originalUrl.startsWith(API_PREFIX) && req.accepts(['json', 'html']) === 'html';
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
