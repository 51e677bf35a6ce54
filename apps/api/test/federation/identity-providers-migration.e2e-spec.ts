import type { DataSource } from 'typeorm';
import { unmigratedDatabase } from '../support/unmigrated-database.js';

/** Migration 030 (identity providers, issue #34) applies, reverts exactly, and applies again; its session column follows the session's JSON. */
describe('migration 030: identity providers', () => {
  let db: DataSource;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ db, close } = await unmigratedDatabase());
    await db.runMigrations({ transaction: 'each' });
  });
  afterAll(() => close?.());

  // sql-on-purpose: the schema's tables, from information_schema
  const tables = async () =>
    ((await db.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name IN ('identity_providers', 'federated_identities') ORDER BY 1`)) as Array<{ table_name: string }>).map(
      (r) => r.table_name,
    );
  // sql-on-purpose: the schema's columns, from information_schema
  const sessionColumns = async () =>
    ((await db.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'web_sessions' ORDER BY column_name`)) as Array<{ column_name: string }>).map((r) => r.column_name);

  it('reverts exactly and applies again', async () => {
    expect(await tables()).toEqual(['federated_identities', 'identity_providers']);
    expect(await sessionColumns()).toContain('federated_link_id');
    // sql-on-purpose: the migrations table says what is applied
    while (((await db.query(`SELECT name FROM migrations`)) as Array<{ name: string }>).some((m) => m.name === 'IdentityProviders1795400000030')) {
      await db.undoLastMigration({ transaction: 'each' });
    }
    expect(await tables()).toEqual([]);
    expect(await sessionColumns()).toEqual(['expire', 'sess', 'sid', 'user_id']);
    await db.runMigrations({ transaction: 'each' });
    expect(await tables()).toEqual(['federated_identities', 'identity_providers']);
  });

  it('lifts the link a session was started through out of its JSON, and leaves other sessions without one', async () => {
    const link = '5b0c6a9e-3f2d-4c1e-9a7b-2d4e6f8a0c1e';
    // sql-on-purpose: rows the migration's generated column is computed from
    await db.query(`INSERT INTO web_sessions (sid, sess, expire) VALUES ('a', $1, now() + interval '1 hour'), ('b', '{"cookie":{}}', now() + interval '1 hour')`, [JSON.stringify({ federatedLinkId: link })]);
    // sql-on-purpose: the column the migration added, as stored
    expect(await db.query(`SELECT sid, federated_link_id FROM web_sessions ORDER BY sid`)).toEqual([
      { sid: 'a', federated_link_id: link },
      { sid: 'b', federated_link_id: null },
    ]);
  });
});
