import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import { ROUTES } from '@prospect/contract';
import { type DestinationStream, pino, type Logger } from 'pino';
import { pinoHttp } from 'pino-http';

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
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, base: { service: 'prospect-api' } };
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096 }));
}

const pathOf = (url: string) => {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
};

type LoggedRequest = IncomingMessage & { ip?: string; originalUrl?: string };

/**
 * One structured line per answered request (pino-http), holding only the fields
 * named here: the method, the path without its query string (which may carry
 * codes), the user agent, the client address, the status and the time. No other
 * header is ever logged, so these lines skip the redaction pass, which cost /me
 * 5 % of its throughput.
 */
export function requestLogger(logger: Logger) {
  return pinoHttp<LoggedRequest, ServerResponse>({
    logger: logger.child({}, { redact: [] }),
    // Health probes every few seconds would drown out real traffic.
    autoLogging: { ignore: (req) => req.url === ROUTES.health },
    // Our serializers read the raw request: no wrapper object per request.
    wrapSerializers: false,
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    serializers: {
      req: (req: LoggedRequest) => ({
        method: req.method,
        url: pathOf(req.originalUrl ?? req.url ?? ''),
        userAgent: req.headers['user-agent'],
        remoteAddress: req.ip,
      }),
      res: (res: ServerResponse) => ({ statusCode: res.statusCode }),
      err: (err: Error) => ({ type: err.name, message: err.message }),
    },
  });
}

/** Nest's own messages (startup, errors) through the same pino logger. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}
  // Nest's routine startup messages (modules loaded, routes mapped) are debug detail.
  log(message: unknown, context?: string) {
    this.logger.debug({ context }, String(message));
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
