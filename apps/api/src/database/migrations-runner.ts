import { DataSource } from 'typeorm';
import { DatabaseInfo } from './database-info.js';
import { Sql } from './sql.js';

/** Key of the session-level advisory lock every migration run takes ('prmg'). */
const MIGRATION_LOCK = 0x70726d67;

/** Migrations are pending and this instance may not apply them (MIGRATE_ON_START=false). */
export class MigrationsPendingError extends Error {
  constructor() {
    super('the database needs migrations and MIGRATE_ON_START=false: run `npm run migrate` (or `node apps/api/dist/main.js migrate`) first');
  }
}

/**
 * Applies the pending migrations, each in its own transaction, while holding a Postgres
 * advisory lock on a connection of its own: any number of instances (and `migrate` jobs)
 * starting at once on one database run them one after another, and all but the first find
 * nothing left to do. TypeORM's own `migrationsRun` takes no lock, so two instances on an
 * empty database raced ("relation … already exists").
 * @param lock false on the embedded database: one process by construction (its data
 *   directory is locked), and a pool of one connection, which the lock would take.
 * @returns the names of the migrations applied.
 */
export async function runMigrationsLocked(dataSource: DataSource, lock = true): Promise<string[]> {
  if (!lock) return (await dataSource.runMigrations({ transaction: 'each' })).map((m) => m.name);
  const holder = dataSource.createQueryRunner();
  await holder.connect();
  try {
    await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      return (await dataSource.runMigrations({ transaction: 'each' })).map((m) => m.name);
    } finally {
      await holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    await holder.release();
  }
}

/**
 * Brings a freshly opened data source's schema up to date, or refuses to start without it.
 * Behind a pooler the migrations run on a connection to the server itself (DATABASE_DIRECT_URL):
 * the advisory lock is a session's.
 */
export async function prepareSchema(dataSource: DataSource, database: DatabaseInfo, settings: { migrateOnStart: boolean; timeoutMs: number }): Promise<void> {
  if (!settings.migrateOnStart) {
    if (await dataSource.showMigrations()) throw new MigrationsPendingError();
  } else if (database.behindPooler) {
    await migrateDatabase(database.directUrl, { embedded: false, timeoutMs: settings.timeoutMs });
  } else {
    await runMigrationsLocked(dataSource, !database.embedded);
  }
}

/**
 * `node apps/api/dist/main.js migrate` (`npm run migrate`): a step of its own before a rollout,
 * on a connection pool of two (one holds the lock, one migrates).
 */
export function migrateDatabase(url: string, options: { embedded: boolean; timeoutMs: number }): Promise<string[]> {
  return withDataSource(url, options.timeoutMs, (dataSource) => runMigrationsLocked(dataSource, !options.embedded));
}

/** A data source of its own for a one-off command (pool of two: one may hold the migration lock), closed after `use`. */
export async function withDataSource<T>(url: string, timeoutMs: number, use: (dataSource: DataSource) => Promise<T>): Promise<T> {
  const { typeOrmOptions } = await import('./typeorm-options.js');
  const dataSource = await new DataSource(typeOrmOptions(url, 2, timeoutMs)).initialize();
  try {
    return await use(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

/**
 * A one-off command that works through repositories (main.js setup-code): the schema prepared as a
 * start prepares it (MIGRATE_ON_START's rule), then `use` is handed the one door to the data, `Sql`;
 * the connection is closed after.
 */
export function withSchemaReady<T>(url: string, options: { embedded: boolean; migrateOnStart: boolean; timeoutMs: number }, use: (sql: Sql) => Promise<T>): Promise<T> {
  return withDataSource(url, options.timeoutMs, async (dataSource) => {
    const database = new DatabaseInfo(url, options.embedded);
    await prepareSchema(dataSource, database, options);
    return use(new Sql(dataSource, database));
  });
}
