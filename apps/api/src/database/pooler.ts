import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DatabaseInfo } from './database-info.js';

/**
 * Running behind a transaction pooler (PgBouncer): what the app cannot do through one, and how
 * a wrong setup is told in words instead of the pooler's own errors.
 *
 * Through PgBouncer in transaction mode, consecutive statements of one pool connection may run
 * on different server sessions, so a session's state does not carry: a LISTEN, a session
 * advisory lock and named prepared statements (before PgBouncer 1.21) all break. PgBouncer also
 * refuses startup parameters it does not know (`statement_timeout`, `options`), so behind it the
 * server-side statement timeout must come from the server (the role's settings) or PgBouncer's
 * `connect_query`; pg's client-side `query_timeout` still bounds every wait either way.
 */

const logger = new Logger('Database');

/** The start refused: DATABASE_URL leads to a pooler and the settings for one are missing. */
export class PoolerSetupError extends Error {
  constructor(detail: string) {
    super(
      `DATABASE_URL leads to a connection pooler (${detail}): set DATABASE_DIRECT_URL to the Postgres server itself and DATABASE_PREPARED_STATEMENTS=false (docs/operations.md: PgBouncer)`,
    );
  }
}

/** PgBouncer's answer to the `statement_timeout` the pool sends when it believes it talks to the server. */
export function asPoolerSetupError(err: unknown, database: DatabaseInfo): PoolerSetupError | undefined {
  const match = /unsupported startup parameter: (\S+)/.exec((err as Error | null)?.message ?? '');
  if (!match || database.behindPooler) return undefined;
  return new PoolerSetupError(`it refused the startup parameter ${match[1]}`);
}

/** Behind a pooler, says so when statements have no server-side time limit. */
export async function checkServerStatementTimeout(dataSource: DataSource, database: DatabaseInfo, timeoutMs: number): Promise<void> {
  if (!database.behindPooler) return;
  const [row] = (await dataSource.query(`SELECT current_setting('statement_timeout') AS value, current_user AS role`)) as Array<{ value: string; role: string }>;
  if (row && row.value === '0') {
    logger.warn(
      `statements through the pooler have no server-side time limit: run \`ALTER ROLE ${row.role} SET statement_timeout = '${timeoutMs}ms'\` or set PgBouncer's connect_query; until then only the client's limit (DATABASE_TIMEOUT_MS) holds`,
    );
  }
}

let clashTold = false;
/** A named statement met another session's (or none): the pool is a pooler that cannot keep them. Said once. */
export function explainPreparedStatementClash(err: unknown): void {
  const code = (err as { code?: string } | null)?.code;
  // 42P05: prepared statement already exists; 26000: prepared statement does not exist.
  if (clashTold || (code !== '42P05' && code !== '26000')) return;
  clashTold = true;
  logger.error(
    `${(err as Error).message}: DATABASE_URL seems to lead to a transaction pooler (PgBouncer) that cannot keep prepared statements: set DATABASE_PREPARED_STATEMENTS=false`,
  );
}
