import { DataSource } from 'typeorm';
import { typeOrmOptions } from '../src/database/typeorm-options.js';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';

describe('migrations', () => {
  let database: TestDatabase;
  let db: DataSource;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = new DataSource({ ...typeOrmOptions(database.url, 1), migrationsRun: false, logging: false });
    await db.initialize();
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  const tables = async () =>
    (
      (await db.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'migrations' ORDER BY 1`)) as Array<{
        table_name: string;
      }>
    ).map((r) => r.table_name);

  it(`apply on an empty ${process.env.TEST_DATABASE_URL ? 'Postgres server' : 'embedded Postgres'}, revert exactly, and apply again`, async () => {
    expect(await tables()).toEqual([]);
    const applied = await db.runMigrations({ transaction: 'each' });
    expect(applied.length).toBe(db.migrations.length);
    expect(await tables()).toEqual(['access_tokens', 'auth_events', 'device_logins', 'oauth_clients', 'rate_limits', 'refresh_tokens', 'server_secrets', 'users', 'web_sessions']);

    for (let i = 0; i < applied.length; i++) await db.undoLastMigration({ transaction: 'each' });
    expect(await tables()).toEqual([]);

    await db.runMigrations({ transaction: 'each' });
    expect(await tables()).toEqual(['access_tokens', 'auth_events', 'device_logins', 'oauth_clients', 'rate_limits', 'refresh_tokens', 'server_secrets', 'users', 'web_sessions']);
    expect(await db.showMigrations()).toBe(false); // nothing pending
  });
});
