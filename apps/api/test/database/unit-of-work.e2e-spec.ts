import { DataSource } from 'typeorm';
import { DatabaseInfo } from '../../src/database/database-info.js';
import { Sql } from '../../src/database/sql.js';
import type { Tx } from '../../src/database/tx.js';
import { typeOrmOptions } from '../../src/database/typeorm-options.js';
import { UnitOfWork } from '../../src/database/unit-of-work.js';
import { DeviceLoginsRepository } from '../../src/device-login/device-logins.repository.js';
import { emptyServerDatabase } from '../support/server-database.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

describe('UnitOfWork (the one way to run a transaction) and the Tx it passes on', () => {
  let database: TestDatabase;
  let db: DataSource;
  let sql: Sql;
  let uow: UnitOfWork;
  beforeAll(async () => {
    database = await createTestDatabase();
    // One connection: what a statement set for its own transaction can be looked at on the same connection after it.
    db = new DataSource({ ...typeOrmOptions(database.url, 1), logging: false });
    await db.initialize();
    await db.runMigrations();
    sql = new Sql(db, new DatabaseInfo(database.url, database.kind === 'embedded'));
    uow = new UnitOfWork(db, sql);
    await sql.rows(`CREATE TABLE uow_probe (n int)`, []);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  const probe = async () => (await sql.rows<{ n: number }>(`SELECT n FROM uow_probe ORDER BY n`, [])).map((row) => row.n);

  it('commits what the work wrote when it resolves, then runs what waited for the commit', async () => {
    const seen: Array<number[] | string> = [];
    const result = await uow.run(async (tx) => {
      await sql.rows(`INSERT INTO uow_probe VALUES (1)`, [], tx);
      uow.afterCommit(tx, () => seen.push('committed'));
      seen.push(await sql.rows<{ n: number }>(`SELECT n FROM uow_probe`, [], tx).then((rows) => rows.map((row) => row.n)));
      return 'done';
    });
    expect(result).toBe('done');
    expect(seen).toEqual([[1], 'committed']);
    expect(await probe()).toEqual([1]);
  });

  it('rolls back everything when the work throws, rethrows its error, and runs nothing that waited for a commit', async () => {
    let after = false;
    await expect(
      uow.run(async (tx) => {
        await sql.rows(`INSERT INTO uow_probe VALUES (2)`, [], tx);
        uow.afterCommit(tx, () => (after = true));
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(after).toBe(false);
    expect(await probe()).toEqual([1]);
  });

  it('takes a transaction-level lock that another transaction cannot take until it ends', async () => {
    // Two connections for this one: the second transaction runs while the first holds the lock. On a
    // Postgres server even where the suite runs on the embedded database, whose one backend runs one transaction at a time.
    const server = await emptyServerDatabase();
    const two = new DataSource({ ...typeOrmOptions(server.url, 2), logging: false });
    await two.initialize();
    try {
      const uowTwo = new UnitOfWork(two, new Sql(two, new DatabaseInfo(server.url, false)));
      const held = await uowTwo.run(async (tx) => {
        expect(await uowTwo.tryLock(tx, 4242)).toBe(true);
        return uowTwo.run((other) => uowTwo.tryLock(other, 4242));
      });
      expect(held).toBe(false);
      expect(await uowTwo.run((tx) => uowTwo.tryLock(tx, 4242))).toBe(true);
    } finally {
      await two.destroy();
      await server.drop();
    }
  });

  it('refuses anything but a Tx it made, so nothing can pass a raw connection or manager as one', async () => {
    await expect(sql.rows(`SELECT 1`, [], db.manager as unknown as Tx)).rejects.toThrow(TypeError);
  });

  it("a device poll's claim writes its slot alone, in an unlogged table: the login's row is read, not rewritten", async () => {
    const logins = new DeviceLoginsRepository(sql);
    const hash = Buffer.alloc(32, 7);
    const now = new Date();
    await logins.insertStarted({
      deviceCodeHash: hash,
      userCode: 'BCDFGHJK',
      clientName: null,
      hostname: null,
      requestedIp: null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + 600_000),
      userAgent: null,
      clientId: 'prospect-cli',
      scope: 'profile',
    });
    // sql-on-purpose: the version of the login's row (a rewrite makes a new one) and the slot table's persistence
    const rowVersion = async () => (await sql.rows<{ v: string }>(`SELECT xmin::text AS v FROM device_logins WHERE device_code_hash = $1`, [hash]))[0]!.v;
    const before = await rowVersion();
    expect((await logins.claimPoll(hash, 'prospect-cli', new Date(now.getTime() - 5_000), now))?.accepted).toBe(true);
    expect((await logins.claimPoll(hash, 'prospect-cli', new Date(now.getTime() - 5_000), now))?.accepted).toBe(false);
    expect(await rowVersion()).toBe(before);
    // sql-on-purpose: an unlogged table writes no WAL, so its commit waits for no flush
    expect(await sql.rows(`SELECT relpersistence FROM pg_class WHERE relname = 'device_poll_slots'`, [])).toEqual([{ relpersistence: 'u' }]);
  });
});
