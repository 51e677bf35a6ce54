import { DataSource } from 'typeorm';
import { DatabaseInfo } from '../../src/database/database-info.js';
import { Sql } from '../../src/database/sql.js';
import { typeOrmOptions } from '../../src/database/typeorm-options.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

describe('Sql (the hot statements on the pg pool)', () => {
  let database: TestDatabase;
  let db: DataSource;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  // A pool of one connection per test, so pg_prepared_statements shows the statements of the
  // connection Sql used, and each test starts with none.
  beforeEach(async () => {
    db = new DataSource({ ...typeOrmOptions(database.url, 1), migrationsRun: false, logging: false });
    await db.initialize();
  });
  afterEach(() => db?.destroy());
  afterAll(() => database?.drop());

  it('on a Postgres server, prepares each statement text once per connection and binds new values every time', async () => {
    const sql = new Sql(db, new DatabaseInfo(database.url, false));
    const SUM = 'SELECT $1::int + $2::int AS sum';
    const PREPARED = `SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'prospect\\_%' ORDER BY name`;
    expect(await sql.rows(SUM, [1, 2])).toEqual([{ sum: 3 }]);
    expect(await sql.rows(SUM, [40, 2])).toEqual([{ sum: 42 }]);
    expect(await sql.rows<{ name: string; statement: string }>(PREPARED, [])).toEqual([
      { name: 'prospect_1', statement: SUM },
      { name: 'prospect_2', statement: PREPARED },
    ]);
  });

  it('on the embedded database, prepares nothing: its connections share one backend, where names would clash', async () => {
    const sql = new Sql(db, new DatabaseInfo(database.url, true));
    const PRODUCT = 'SELECT $1::int * $2::int AS product';
    expect(await sql.rows(PRODUCT, [6, 7])).toEqual([{ product: 42 }]);
    expect(await sql.rows(`SELECT name FROM pg_prepared_statements WHERE statement = $1`, [PRODUCT])).toEqual([]);
  });
});
