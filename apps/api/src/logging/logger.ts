import type { LoggerService } from '@nestjs/common';
import { type DestinationStream, pino, type Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import type { IncomingMessage } from 'node:http';

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

/** One structured line per request, with the route's status and duration. */
export function requestLogger(logger: Logger) {
  return pinoHttp({
    logger,
    // Health probes every few seconds would drown out real traffic.
    autoLogging: { ignore: (req: IncomingMessage) => req.url === '/api/health' },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    serializers: {
      req: (req: { method: string; url: string; headers: Record<string, string>; remoteAddress?: string }) => ({
        method: req.method,
        // Query strings may carry codes; the path is enough to follow a request.
        url: req.url.split('?')[0],
        userAgent: req.headers['user-agent'],
        remoteAddress: req.remoteAddress,
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
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
