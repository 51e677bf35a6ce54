import type { DataSource } from 'typeorm';
import { unmigratedDatabase } from '../support/unmigrated-database.js';

/** Every table the migrations create, in name order. */
const EVERY_TABLE = [
  'access_tokens',
  'account_tokens',
  'auth_events',
  'authorization_codes',
  'device_logins',
  'federated_identities',
  'idempotency_keys',
  'identity_providers',
  'mail_outbox',
  'oauth_clients',
  'oauth_consents',
  'organization_domains',
  'organization_invitations',
  'organization_join_requests',
  'organization_members',
  'organizations',
  'passkeys',
  'rate_limits',
  'recovery_codes',
  'refresh_tokens',
  'saml_assertion_uses',
  'saml_connections',
  'scim_group_members',
  'scim_group_roles',
  'scim_groups',
  'scim_requests',
  'scim_settings',
  'scim_tokens',
  'scim_users',
  'server_secrets',
  'service_account_assertions',
  'service_account_federations',
  'service_account_keys',
  'service_account_secrets',
  'service_account_subject_tokens',
  'service_accounts',
  'totp_factors',
  'users',
  'web_sessions',
  'webhook_deliveries',
  'webhooks',
];

describe('migrations', () => {
  let db: DataSource;
  let close: () => Promise<void>;
  beforeAll(async () => ({ db, close } = await unmigratedDatabase()));
  afterAll(() => close?.());

  // sql-on-purpose: the schema as information_schema lists it
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
    expect(await tables()).toEqual(EVERY_TABLE);

    for (let i = 0; i < applied.length; i++) await db.undoLastMigration({ transaction: 'each' });
    expect(await tables()).toEqual([]);

    await db.runMigrations({ transaction: 'each' });
    expect(await tables()).toEqual(EVERY_TABLE);
    expect(await db.showMigrations()).toBe(false); // nothing pending
  });

  it('Scopes (019) cuts every earlier grant down to what its client is allowed: the CLI everything, any other client profile', async () => {
    // Back to just before it (later migrations first).
    // sql-on-purpose: the migrations table
    const applied = async () => ((await db.query(`SELECT name FROM migrations`)) as Array<{ name: string }>).map((m) => m.name);
    while ((await applied()).includes('Scopes1795400000019')) await db.undoLastMigration({ transaction: 'each' });
    // sql-on-purpose: rows written before the migration, by the schema of then
    await db.query(`INSERT INTO oauth_clients (id, name, created_at) VALUES ('acme-sync', 'Acme Sync', now())`);
    // sql-on-purpose: rows written before the migration, by the schema of then
    const login = (code: string, clientId: string, scope: string | null) =>
      db.query(
        `INSERT INTO device_logins (device_code_hash, user_code, created_at, expires_at, client_id, scope)
         VALUES (sha256(convert_to($1::text, 'UTF8')), $1, now(), now() + interval '10 minutes', $2, $3)`,
        [code, clientId, scope],
      );
    await login('BCDFGHJK', 'prospect-cli', null);
    await login('BCDFGHJL', 'acme-sync', 'admin billing:write profile');
    await login('BCDFGHJM', 'acme-sync', null);
    await login('BCDFGHJN', 'acme-sync', 'admin');
    await db.runMigrations({ transaction: 'each' });
    // sql-on-purpose: what the migration made of those rows
    const rows = (await db.query(`SELECT user_code, scope FROM device_logins ORDER BY user_code`)) as Array<{ user_code: string; scope: string }>;
    expect(rows.map((r) => [r.user_code, r.scope])).toEqual([
      ['BCDFGHJK', 'profile tokens admin'],
      ['BCDFGHJL', 'profile'],
      ['BCDFGHJM', 'profile'],
      ['BCDFGHJN', ''],
    ]);
    // sql-on-purpose: what the migration made of those rows
    expect(await db.query(`SELECT id, allowed_scopes FROM oauth_clients ORDER BY id`)).toEqual([
      { id: 'acme-sync', allowed_scopes: 'profile' },
      // …and Organizations (038), run after it, allows the CLI `orgs` too.
      { id: 'prospect-cli', allowed_scopes: 'profile tokens admin orgs' },
    ]);
  });
});
