import type { LoggerService } from '@nestjs/common';
import { type DestinationStream, pino, type Logger } from 'pino';
import { ROUTES } from '@prospect/contract';
import type { FastifyInstance } from 'fastify';

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

/**
 * One structured line per answered request, written when the response is
 * sent. A hook rather than fastify's own request logging, which writes two
 * lines per request and builds a child logger for each.
 */
export function logRequests(app: FastifyInstance, logger: Logger): void {
  // These lines hold only the fields named below (the path without its query, never a
  // header but the user agent), so no redaction path can match: skip its cost per line.
  const requestLog = logger.child({}, { redact: [] });
  app.addHook('onResponse', (req, reply, done) => {
    // Health probes every few seconds would drown out real traffic.
    if (req.url !== ROUTES.health) {
      const status = reply.statusCode;
      requestLog[status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info'](
        {
          // Query strings may carry codes; the path is enough to follow a request.
          req: { method: req.method, url: pathOf(req.url), userAgent: req.headers['user-agent'], remoteAddress: req.ip },
          res: { statusCode: status },
          responseTime: Math.round(reply.elapsedTime),
        },
        'request completed',
      );
    }
    done();
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
