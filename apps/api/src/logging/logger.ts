import { randomUUID } from 'node:crypto';
import type { LoggerService } from '@nestjs/common';
import { ROUTES } from '@prospect/contract';
import type { NextFunction, Request, Response } from 'express';
import { type DestinationStream, pino, type Logger } from 'pino';
import { requestContext } from '../common/request-context.js';

/**
 * Secrets never reach a log line: credentials travel in headers and cookies,
 * and token-like fields could appear in any logged object.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.accessToken',
  '*.refreshToken',
  '*.deviceCode',
  '*.token',
  '*.password',
];

/**
 * @param destination defaults to stdout, written asynchronously in 4 KiB
 *   batches: a synchronous write per request line cost a quarter of /me's CPU.
 *   `main.ts` flushes it on shutdown. Tests pass a stream to read lines back.
 * @param traceFields with tracing on (telemetry/), the active span's `trace_id` and `span_id`
 *   for every line; without it, no line pays for looking them up.
 */
export function createLogger(level: string, destination?: DestinationStream, traceFields?: () => object): Logger {
  // Every line written while a request is handled names it (see requestLogger).
  const requestFields = () => {
    const request = requestContext.getStore();
    return request ? { reqId: request.id } : {};
  };
  const options = {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    base: { service: 'prospect-api' },
    mixin: traceFields ? () => ({ ...requestFields(), ...traceFields() }) : requestFields,
  };
  if (destination) return pino(options, destination);
  const stdout = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  // A quiet server must not hold a line back until 4 KiB have gathered: flush every second.
  setInterval(() => stdout.flush(), FLUSH_INTERVAL_MS).unref();
  return pino(options, stdout);
}

const FLUSH_INTERVAL_MS = 1_000;

const pathOf = (url: string) => {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
};

/**
 * One structured line per answered request, written when the response is
 * finished, holding only the fields named here: the method, the path without its
 * query string (which may carry codes), the user agent, the client address, the
 * status and the time. No other header is ever logged, so these lines skip the
 * redaction pass, which cost /me 5 % of its throughput.
 *
 * Written by hand rather than with pino-http: pino-http builds a child logger
 * and serializes the request for every request, and keeps per-request logger
 * arrays on both req and res. On the bench machine that cost /me a fifth of
 * its throughput (about 6,000 → 4,000–5,000 req/s in the same run); this hook is
 * one listener and one pino call. `observe` sees every answered request too (the metrics).
 */
export function requestLogger(logger: Logger, observe?: (req: Request, status: number, seconds: number) => void) {
  const requestLog = logger.child({}, { redact: [] });
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = performance.now();
    const id = requestIdOf(req);
    res.setHeader(REQUEST_ID_HEADER, id);
    // `on`, not `once`: a response finishes once, and `once` wraps the listener anew per request.
    res.on('finish', () => {
      observe?.(req, res.statusCode, (performance.now() - started) / 1000);
      // Health probes every few seconds would drown out real traffic.
      if (req.originalUrl.startsWith(ROUTES.health)) return;
      const status = res.statusCode;
      // A 503 is the database being away, said once by itself; a line per request is enough.
      requestLog[status >= 500 && status !== 503 ? 'error' : status >= 400 ? 'warn' : 'info'](
        {
          reqId: id,
          req: { method: req.method, url: pathOf(req.originalUrl), userAgent: req.headers['user-agent'], remoteAddress: req.ip },
          res: { statusCode: status },
          responseTime: Math.round(performance.now() - started),
        },
        'request completed',
      );
    });
    requestContext.run({ id, userAgent: req.headers['user-agent'] ?? null }, next);
  };
}

export const REQUEST_ID_HEADER = 'X-Request-Id';
/** What a proxy or a client may send as its request id: short, and nothing that could forge a log line. */
const WELL_FORMED_REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;

/** The request's id: the caller's `X-Request-Id` when well-formed (a proxy's, to follow one request across hops), else a new UUID. */
function requestIdOf(req: Request): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && WELL_FORMED_REQUEST_ID.test(given) ? given : randomUUID();
}

const NEST_STARTUP_CONTEXTS = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

/** Nest's own messages (startup, errors) through the same pino logger. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}
  // Nest's routine startup messages (modules loaded, routes mapped) are debug detail; ours are info.
  log(message: unknown, context?: string) {
    this.logger[context && NEST_STARTUP_CONTEXTS.has(context) ? 'debug' : 'info']({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string) {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string) {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string) {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string) {
    this.logger.trace({ context }, String(message));
  }
}
