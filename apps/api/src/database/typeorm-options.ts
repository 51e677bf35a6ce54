import type { DataSourceOptions } from 'typeorm';
import { BrokenConnectionDiscarder } from './broken-connection-discarder.js';
import { MIGRATIONS } from './migrations/index.js';

/**
 * One definition of how we talk to Postgres, for the app and the migration CLI.
 * The schema is only ever changed by the committed migrations, run at startup.
 */
/**
 * @param timeoutMs bounds every wait on the database, so a database that is gone or
 *   frozen turns into errors (answered 503) instead of requests that hang: connecting,
 *   waiting for a pooled connection, a statement on the server (`statement_timeout`)
 *   and, for a server that stopped answering at all, on the client (`query_timeout`).
 *   A connection that timed out or broke is thrown away, never rolled back in line
 *   (BrokenConnectionDiscarder), so no request waits on the database longer than that.
 */
/**
 * @param behindPooler the url leads to a transaction pooler (pooler.ts), which refuses
 *   `statement_timeout` as a startup parameter: the server's own setting applies instead.
 */
export function typeOrmOptions(url: string, poolSize: number, timeoutMs = 5_000, behindPooler = false): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    migrations: MIGRATIONS,
    // Applied under an advisory lock (migrations-runner.ts), not by TypeORM's unlocked run.
    migrationsRun: false,
    migrationsTransactionMode: 'each',
    synchronize: false,
    subscribers: [BrokenConnectionDiscarder],
    // TypeORM's own logging prints failed queries with their parameters (hashes,
    // e-mails) to the console, past pino's redaction; errors reach our filter instead.
    logging: false,
    extra: {
      max: poolSize,
      connectionTimeoutMillis: timeoutMs,
      ...(behindPooler ? {} : { statement_timeout: timeoutMs }),
      // A little later than the server's own limit, which answers with a clearer error.
      query_timeout: timeoutMs + 500,
      keepAlive: true,
    },
  };
}
