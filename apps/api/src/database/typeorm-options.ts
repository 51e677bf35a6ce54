import type { DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities.js';
import { MIGRATIONS } from './migrations/index.js';

/**
 * One definition of how we talk to Postgres, for the app and the migration CLI.
 * The schema is only ever changed by the committed migrations, run at startup.
 */
export function typeOrmOptions(url: string, poolSize: number): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsRun: true,
    migrationsTransactionMode: 'each',
    synchronize: false,
    // TypeORM's own logging prints failed queries with their parameters (hashes,
    // e-mails) to the console, past pino's redaction; errors reach our filter instead.
    logging: false,
    // pg's own pool; fail fast rather than queue forever when the database is gone.
    extra: { max: poolSize, connectionTimeoutMillis: 5_000 },
  };
}
