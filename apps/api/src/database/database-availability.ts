import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { DatabaseDeadlineExceeded } from './database-deadline.js';
import { Sql } from './sql.js';

/** Socket errors of a database that is gone or out of reach. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * SQLSTATEs that say the database cannot serve now, not that the request was wrong:
 * class 08 (connection exception), shutting down or starting (57P01–57P03), too many
 * connections (53300), a statement cancelled by `statement_timeout` (57014), and a write
 * refused by a server in recovery (25006, read_only_sql_transaction): during a failover the
 * address may lead to a standby not promoted yet, or to the old primary restarted as one. The
 * app never opens a read-only transaction itself, so 25006 only ever means that.
 */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '25006']);
/** What pg says, without a code, when a connection or a query could not complete in time or broke. */
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed and is not queryable|Connection refused|server closed the connection/i;
/**
 * What TypeORM throws when a transaction's connection broke under it: pg reported the error
 * on the connection, TypeORM released it, and the transaction's next statement finds it gone.
 */
const RELEASED_CONNECTION_ERRORS = new Set(['QueryRunnerAlreadyReleasedError', 'QueryRunnerProviderAlreadyReleasedError']);

/** True when `err` means the database cannot answer now (a 503), rather than a fault of ours (a 500). */
export function isDatabaseUnavailable(err: unknown): boolean {
  // A request's whole budget for the database spent waiting (DatabaseDeadline): a timeout like pg's own.
  if (err instanceof DatabaseDeadlineExceeded) return true;
  if (err instanceof Error && RELEASED_CONNECTION_ERRORS.has(err.name)) return true;
  const driverError = ((err as { driverError?: unknown } | null)?.driverError ?? err) as { code?: unknown; message?: unknown } | null;
  if (!driverError || typeof driverError !== 'object') return false;
  const code = typeof driverError.code === 'string' ? driverError.code : '';
  if (NETWORK_CODES.has(code) || UNAVAILABLE_STATES.has(code) || code.startsWith('08')) return true;
  return typeof driverError.message === 'string' && UNAVAILABLE_MESSAGES.test(driverError.message);
}

/** How often a database known to be down is asked whether it is back. */
const PROBE_INTERVAL_MS = 1_000;

/**
 * The one notion of "the database is available" (to the pool, which every request uses):
 * whoever finds it gone (a request, a pooled connection, a background write, the revocation
 * listener when the pool fails too) reports here, and the log says once that it went away and
 * once that it came back, however many requests failed (each answered 503 without a stack
 * trace) and however often the listener reconnected in between.
 */
@Injectable()
export class DatabaseAvailability implements OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  private probe?: NodeJS.Timeout;
  private since?: number;

  constructor(private readonly sql: Sql) {
    // A pooled connection that broke while idle: pg removes it; we learn the database went away.
    sql.pool.on('error', (err) => this.report(err));
    // And one listener on every connection for its whole life. pg-pool and TypeORM each listen
    // only while they hold a connection, and hand it over between them: a connection killed
    // (pg_terminate_backend, a failover) in such a gap emits an 'error' nobody listens to, which
    // ends the process. Seen under the faults test's load; whoever used the connection still
    // gets the error from its query.
    sql.pool.on('connect', (client) => client.on('error', (err) => this.report(err)));
  }

  get down(): boolean {
    return this.since !== undefined;
  }

  /** Something failed because the database is unavailable (see isDatabaseUnavailable). */
  report(err: unknown): void {
    if (this.down) return;
    this.since = Date.now();
    this.logger.warn(`database unavailable (${describeDatabaseError(err)}); answering 503 until it is back`);
    this.probe = setInterval(() => void this.check(), PROBE_INTERVAL_MS);
    this.probe.unref();
  }

  /**
   * A connection of its own, outside the pool (the revocation listener's), broke. That alone
   * is no outage: requests use the pool. Asks the pool (within DATABASE_TIMEOUT_MS); when it
   * cannot reach the database either, this is the outage, reported as such. Resolves whether it
   * was (or already is) reported: false means the pool answers, and the failure is that
   * connection's own, for its owner to say.
   */
  async reportIfPoolDown(): Promise<boolean> {
    if (this.down) return true;
    try {
      await this.sql.pool.query('SELECT 1');
      return false;
    } catch (poolErr) {
      if (!isDatabaseUnavailable(poolErr)) return false;
      this.report(poolErr);
      return true;
    }
  }

  onApplicationShutdown(): void {
    clearInterval(this.probe);
  }

  private async check(): Promise<void> {
    try {
      await this.sql.pool.query('SELECT 1');
    } catch {
      return;
    }
    if (!this.down) return;
    clearInterval(this.probe);
    this.logger.log(`database available again after ${Math.round((Date.now() - this.since!) / 1000)} s`);
    this.since = undefined;
  }
}

/** An error of pg or TypeORM as `code: message`, for a log line. */
export function describeDatabaseError(err: unknown): string {
  const driverError = ((err as { driverError?: unknown } | null)?.driverError ?? err) as { code?: string; message?: string };
  return [driverError?.code, driverError?.message].filter(Boolean).join(': ') || 'unknown error';
}
