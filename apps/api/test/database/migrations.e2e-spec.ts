import type { DataSource } from 'typeorm';
import { refusalToIssue } from '../../src/grants/grant-rules.js';
import { unmigratedDatabase } from '../support/unmigrated-database.js';

/** Every table the migrations create, in name order. */
const EVERY_TABLE = [
  'access_tokens',
  'account_tokens',
  'auth_events',
  'authorization_codes',
  'device_logins',
  'device_poll_slots',
  'federated_identities',
  'grants',
  'idempotency_keys',
  'identity_providers',
  'mail_outbox',
  'oauth_clients',
  'oauth_consents',
  'organization_departures',
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

  it('Grants (047) makes every approval a grant of its own, in one transaction: the tokens hang off it, the code grants lose their stand-in device logins', async () => {
    // sql-on-purpose: the migrations table
    const applied = async () => ((await db.query(`SELECT name FROM migrations`)) as Array<{ name: string }>).map((m) => m.name);
    while ((await applied()).includes('Grants1795400000047')) await db.undoLastMigration({ transaction: 'each' });
    // sql-on-purpose: rows written before the migration, by the schema of then: a person, a client,
    // device logins in every state, a code grant's stand-in login, their tokens and the code.
    const [person] = (await db.query(`INSERT INTO users (email, name, credential_epoch) VALUES ('ada@example.com', 'Ada', 3) RETURNING id`)) as Array<{ id: string }>;
    // sql-on-purpose: rows written before the migration, by the schema of then
    await db.query(`INSERT INTO oauth_clients (id, name, created_at) VALUES ('tool', 'Tool', now()) ON CONFLICT DO NOTHING`);
    // sql-on-purpose: rows written before the migration, by the schema of then
    const login = async (userCode: string, fields: { status: string; decided?: boolean; grantType?: string; adminUntil?: string | null; clientId?: string; seed?: string }) =>
      (
        (await db.query(
          `INSERT INTO device_logins (device_code_hash, user_code, status, decided_by_user_id, decided_at, client_id, scope, created_at, expires_at, grant_type,
                                      admin_until, credential_epoch, amr, second_factor, hostname)
           VALUES (sha256(convert_to($1::text, 'UTF8')), $2, $3, CASE WHEN $4 THEN $5::uuid END, CASE WHEN $4 THEN timestamptz '2026-01-02T10:00:00Z' END, $6,
                   'profile tokens admin', timestamptz '2026-01-02T09:59:00Z', timestamptz '2026-01-02T10:09:00Z', $7, $8::timestamptz,
                   CASE WHEN $4 THEN 3 END, CASE WHEN $4 THEN ARRAY['pwd', 'otp', 'mfa'] END, $4, 'ada-laptop')
           RETURNING id`,
          [fields.seed ?? userCode + fields.status, userCode, fields.status, fields.decided ?? false, person!.id, fields.clientId ?? 'prospect-cli', fields.grantType ?? 'device_code', fields.adminUntil ?? null],
        )) as Array<{ id: string }>
      )[0]!.id;
    const redeemed = await login('GRNTBCDF', { status: 'redeemed', decided: true, adminUntil: '2026-01-02T22:00:00Z' });
    const uncollected = await login('GRNTBCDG', { status: 'approved', decided: true });
    const pending = await login('GRNTBCDH', { status: 'pending' });
    const denied = await login('GRNTBCDJ', { status: 'denied', decided: true });
    const codeGrant = await login('', { status: 'redeemed', decided: true, grantType: 'authorization_code', clientId: 'tool' });
    // Approved, then cancelled by "sign out everywhere" before its device collected it.
    const cancelled = await login('GRNTBCDK', { status: 'cancelled', decided: true });
    // A session signed out (its family revoked), and a code grant with no refresh token (no offline access) whose code is gone.
    const endedFamily = await login('GRNTBCDL', { status: 'redeemed', decided: true });
    const quietCodeGrant = await login('', { status: 'redeemed', decided: true, grantType: 'authorization_code', clientId: 'tool', seed: 'quiet' });
    // sql-on-purpose: rows written before the migration, by the schema of then
    const token = async (name: string, family: string | null, mintedBy: string | null) =>
      db.query(
        `INSERT INTO access_tokens (token_hash, user_id, origin, label, device_login_id, minted_by_device_login_id, created_at, expires_at)
         VALUES (sha256(convert_to($1::text, 'UTF8')), $2, CASE WHEN $3::uuid IS NULL THEN 'direct' ELSE 'device' END, $1, $3, $4, now(), now() + interval '1 hour')`,
        [name, person!.id, family, mintedBy],
      );
    await token('session', redeemed, null);
    await token('made-with-the-session', null, redeemed);
    await token('app', codeGrant, null);
    await token('ended', endedFamily, null);
    await token('made-with-the-ended', null, endedFamily);
    await token('quiet-app', quietCodeGrant, null);
    // sql-on-purpose: rows written before the migration, by the schema of then
    await db.query(
      `INSERT INTO refresh_tokens (token_hash, device_login_id, user_id, created_at, expires_at, family_expires_at)
       SELECT sha256(convert_to(f::text, 'UTF8')), f, $1, now(), now() + interval '1 day', now() + interval '30 days' FROM unnest($2::uuid[]) AS f`,
      [person!.id, [redeemed, codeGrant, endedFamily]],
    );
    // sql-on-purpose: rows written before the migration: the signed-out session's family, revoked
    await db.query(`UPDATE refresh_tokens SET revoked_at = now() WHERE device_login_id = $1`, [endedFamily]);
    // sql-on-purpose: rows written before the migration: the signed-out session's family, revoked
    await db.query(`UPDATE access_tokens SET revoked_at = now() WHERE device_login_id = $1 OR minted_by_device_login_id = $1`, [endedFamily]);
    // sql-on-purpose: rows written before the migration, by the schema of then
    await db.query(
      `INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scope, auth_time, amr, credential_epoch, web_session, created_at, expires_at, used_at, grant_id, second_factor)
       VALUES (sha256('\\x01'::bytea), 'tool', $1, 'https://tool.example/cb', 'c', 'profile tokens admin', timestamptz '2026-01-02T09:30:00Z', ARRAY['pwd', 'otp', 'mfa'], 3, 'sid-1',
               now(), now() + interval '1 minute', now(), $2, true)`,
      [person!.id, codeGrant],
    );

    await db.runMigrations({ transaction: 'each' });

    // sql-on-purpose: what the migration made of those rows
    const grantRows = (await db.query(
      `SELECT id, user_id, client_id, grant_type, scope, admin_until, credential_epoch, amr, auth_time, second_factor, web_session, created_at, revoked_at FROM grants ORDER BY created_at, grant_type DESC, id`,
    )) as Array<Record<string, unknown>>;
    const proof = { user_id: person!.id, scope: 'profile tokens admin', credential_epoch: 3, amr: ['pwd', 'otp', 'mfa'], second_factor: true, revoked_at: null };
    expect(new Map(grantRows.map((row) => [row.id, row]))).toEqual(
      new Map([
        [redeemed, { id: redeemed, ...proof, client_id: 'prospect-cli', grant_type: 'device_code', admin_until: new Date('2026-01-02T22:00:00Z'), auth_time: null, web_session: null, created_at: new Date('2026-01-02T10:00:00Z') }],
        [uncollected, { id: uncollected, ...proof, client_id: 'prospect-cli', grant_type: 'device_code', admin_until: null, auth_time: null, web_session: null, created_at: new Date('2026-01-02T10:00:00Z') }],
        [codeGrant, { id: codeGrant, ...proof, client_id: 'tool', grant_type: 'authorization_code', admin_until: null, auth_time: new Date('2026-01-02T09:30:00Z'), web_session: 'sid-1', created_at: new Date('2026-01-02T10:00:00Z') }],
        [endedFamily, { id: endedFamily, ...proof, client_id: 'prospect-cli', grant_type: 'device_code', admin_until: null, auth_time: null, web_session: null, created_at: new Date('2026-01-02T10:00:00Z') }],
        [quietCodeGrant, { id: quietCodeGrant, ...proof, client_id: 'tool', grant_type: 'authorization_code', admin_until: null, auth_time: null, web_session: null, created_at: new Date('2026-01-02T10:00:00Z') }],
      ]),
    );
    // A grant valid before is valid after: the state the doors read under its lock (GrantsRepository.lockForIssue) refuses none of them.
    // sql-on-purpose: the state a door reads, as the grants' lock reads it
    const states = (await db.query(
      `SELECT g.id, g.revoked_at IS NOT NULL AS revoked, u.disabled_at IS NOT NULL AS disabled, u.credential_epoch AS account_epoch, g.credential_epoch AS grant_epoch,
              c.disabled_at IS NOT NULL AS client_disabled, g.second_factor
         FROM grants g JOIN users u ON u.id = g.user_id JOIN oauth_clients c ON c.id = g.client_id`,
    )) as Array<{ id: string; revoked: boolean; disabled: boolean; account_epoch: number; grant_epoch: number | null; client_disabled: boolean; second_factor: boolean }>;
    expect(states).toHaveLength(5);
    for (const state of states) {
      const grant = { revoked: state.revoked, account: { disabled: state.disabled, credentialEpoch: state.account_epoch }, approvedUnderEpoch: state.grant_epoch, clientDisabled: state.client_disabled, secondFactor: state.second_factor };
      expect([state.id, refusalToIssue(grant, { requireSecondFactor: true })]).toEqual([state.id, null]);
    }
    // …and a token revoked before is revoked after, a live one live.
    // sql-on-purpose: what the migration made of those rows
    expect(await db.query(`SELECT label, revoked_at IS NOT NULL AS revoked FROM access_tokens ORDER BY label`)).toEqual([
      { label: 'app', revoked: false },
      { label: 'ended', revoked: true },
      { label: 'made-with-the-ended', revoked: true },
      { label: 'made-with-the-session', revoked: false },
      { label: 'quiet-app', revoked: false },
      { label: 'session', revoked: false },
    ]);
    // sql-on-purpose: what the migration made of those rows
    expect(await db.query(`SELECT grant_id, revoked_at IS NOT NULL AS revoked FROM refresh_tokens ORDER BY grant_id`)).toEqual(
      [
        { grant_id: redeemed, revoked: false },
        { grant_id: codeGrant, revoked: false },
        { grant_id: endedFamily, revoked: true },
      ].sort((a, b) => a.grant_id.localeCompare(b.grant_id)),
    );
    // sql-on-purpose: what the migration made of those rows
    const logins = (await db.query(`SELECT id, status, grant_id FROM device_logins WHERE user_code LIKE 'GRNT%' OR user_code = '' ORDER BY user_code`)) as Array<{ id: string; status: string; grant_id: string | null }>;
    expect(logins).toEqual([
      { id: redeemed, status: 'redeemed', grant_id: redeemed },
      { id: uncollected, status: 'approved', grant_id: uncollected },
      { id: pending, status: 'pending', grant_id: null },
      { id: denied, status: 'denied', grant_id: null },
      { id: cancelled, status: 'cancelled', grant_id: null },
      { id: endedFamily, status: 'redeemed', grant_id: endedFamily },
    ]);
    // sql-on-purpose: what the migration made of those rows
    expect(await db.query(`SELECT label, grant_id, minted_by_grant_id FROM access_tokens ORDER BY label`)).toEqual([
      { label: 'app', grant_id: codeGrant, minted_by_grant_id: null },
      { label: 'ended', grant_id: endedFamily, minted_by_grant_id: null },
      { label: 'made-with-the-ended', grant_id: null, minted_by_grant_id: endedFamily },
      { label: 'made-with-the-session', grant_id: null, minted_by_grant_id: redeemed },
      { label: 'quiet-app', grant_id: quietCodeGrant, minted_by_grant_id: null },
      { label: 'session', grant_id: redeemed, minted_by_grant_id: null },
    ]);
    // sql-on-purpose: what the migration made of those rows
    expect(await db.query(`SELECT grant_id FROM authorization_codes`)).toEqual([{ grant_id: codeGrant }]);
    // sql-on-purpose: the schema: what the device flow no longer keeps
    const loginColumns = ((await db.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'device_logins'`)) as Array<{ column_name: string }>).map((c) => c.column_name);
    expect(loginColumns).toEqual(expect.arrayContaining(['grant_id', 'user_code', 'reply_sealed']));
    expect(loginColumns).not.toEqual(expect.arrayContaining(['grant_type']));
    for (const moved of ['admin_until', 'credential_epoch', 'amr', 'second_factor', 'grant_type']) expect(loginColumns).not.toContain(moved);
    // sql-on-purpose: a grant deleted takes its refresh tokens and the tokens made with it; its own access tokens stay, unlinked
    await db.query(`DELETE FROM grants WHERE id = $1`, [redeemed]);
    expect(await db.query(`SELECT label, grant_id FROM access_tokens ORDER BY label`)).toEqual([
      { label: 'app', grant_id: codeGrant },
      { label: 'ended', grant_id: endedFamily },
      { label: 'made-with-the-ended', grant_id: null },
      { label: 'quiet-app', grant_id: quietCodeGrant },
      { label: 'session', grant_id: null },
    ]);

    // Reverted (with every later migration first), the code grants get their stand-in device logins back, the device
    // logins what moved to their grant, and the tokens their old columns, revoked as they were.
    while ((await applied()).includes('Grants1795400000047')) await db.undoLastMigration({ transaction: 'each' });
    // sql-on-purpose: what the revert made of those rows
    expect(
      await db.query(`SELECT id, user_code, status, grant_type, admin_until, credential_epoch, amr, second_factor FROM device_logins WHERE id = ANY ($1::uuid[]) ORDER BY user_code, id`, [
        [codeGrant, quietCodeGrant, endedFamily, cancelled],
      ]),
    ).toEqual([
      ...[codeGrant, quietCodeGrant]
        .sort()
        .map((id) => ({ id, user_code: '', status: 'redeemed', grant_type: 'authorization_code', admin_until: null, credential_epoch: 3, amr: ['pwd', 'otp', 'mfa'], second_factor: true })),
      // A cancelled login issues nothing: what it had recorded of the approval is not kept across the round trip.
      { id: cancelled, user_code: 'GRNTBCDK', status: 'cancelled', grant_type: 'device_code', admin_until: null, credential_epoch: null, amr: null, second_factor: false },
      { id: endedFamily, user_code: 'GRNTBCDL', status: 'redeemed', grant_type: 'device_code', admin_until: null, credential_epoch: 3, amr: ['pwd', 'otp', 'mfa'], second_factor: true },
    ]);
    // sql-on-purpose: what the revert made of those rows
    expect(await db.query(`SELECT device_login_id, revoked_at IS NOT NULL AS revoked FROM refresh_tokens ORDER BY device_login_id`)).toEqual(
      [
        { device_login_id: codeGrant, revoked: false },
        { device_login_id: endedFamily, revoked: true },
      ].sort((a, b) => a.device_login_id.localeCompare(b.device_login_id)),
    );
    // sql-on-purpose: what the revert made of those rows
    expect(await db.query(`SELECT label, device_login_id, minted_by_device_login_id, revoked_at IS NOT NULL AS revoked FROM access_tokens ORDER BY label`)).toEqual([
      { label: 'app', device_login_id: codeGrant, minted_by_device_login_id: null, revoked: false },
      { label: 'ended', device_login_id: endedFamily, minted_by_device_login_id: null, revoked: true },
      { label: 'made-with-the-ended', device_login_id: null, minted_by_device_login_id: endedFamily, revoked: true },
      { label: 'quiet-app', device_login_id: quietCodeGrant, minted_by_device_login_id: null, revoked: false },
      { label: 'session', device_login_id: null, minted_by_device_login_id: null, revoked: false },
    ]);
    await db.runMigrations({ transaction: 'each' });
    expect(await db.showMigrations()).toBe(false);
  });

  it('ScimAccountDisabledAt (049) takes the account’s disable as the directory’s where a deactivation disabled it, and nothing elsewhere', async () => {
    // sql-on-purpose: the migrations table
    const applied = async () => ((await db.query(`SELECT name FROM migrations`)) as Array<{ name: string }>).map((m) => m.name);
    while ((await applied()).includes('ScimAccountDisabledAt1795400000049')) await db.undoLastMigration({ transaction: 'each' });
    // sql-on-purpose: rows written before the migration, by the schema of then
    const person = async (email: string, disabledAt: string | null) =>
      ((await db.query(`INSERT INTO users (email, name, disabled_at) VALUES ($1, 'P', $2) RETURNING id`, [email, disabledAt])) as Array<{ id: string }>)[0]!.id;
    // sql-on-purpose: rows written before the migration, by the schema of then
    const [org] = (await db.query(`INSERT INTO organizations (slug, name, created_at) VALUES ('scim-049', 'S', now()) RETURNING id`)) as Array<{ id: string }>;
    const byDirectory = await person('gone@scim-049.example', '2026-03-04T05:06:07.089Z');
    const active = await person('here@scim-049.example', null);
    // sql-on-purpose: rows written before the migration, by the schema of then
    await db.query(
      `INSERT INTO scim_users (organization_id, user_id, user_name, active, disabled_account, created_at, updated_at)
       VALUES ($1, $2, 'gone@scim-049.example', false, true, now(), now()), ($1, $3, 'here@scim-049.example', true, false, now(), now())`,
      [org!.id, byDirectory, active],
    );
    await db.runMigrations({ transaction: 'each' });
    // sql-on-purpose: what the migration made of those rows
    const rows = (await db.query(`SELECT user_name, account_disabled_at FROM scim_users WHERE organization_id = $1 ORDER BY user_name`, [org!.id])) as Array<{ user_name: string; account_disabled_at: Date | null }>;
    expect(rows.map((r) => [r.user_name, r.account_disabled_at?.toISOString() ?? null])).toEqual([
      ['gone@scim-049.example', '2026-03-04T05:06:07.089Z'],
      ['here@scim-049.example', null],
    ]);
    // sql-on-purpose: test rows out of the way of the other cases
    await db.query(`DELETE FROM organizations WHERE id = $1`, [org!.id]);
    // sql-on-purpose: test rows out of the way of the other cases
    await db.query(`DELETE FROM users WHERE id = ANY($1::uuid[])`, [[byDirectory, active]]);
  });
  it('AccessTokenIssuedAt (054) keeps on each token when what it acts with was approved, as the verification read computed it', async () => {
    // sql-on-purpose: the migrations table
    const applied = async () => ((await db.query(`SELECT name FROM migrations`)) as Array<{ name: string }>).map((m) => m.name);
    while ((await applied()).includes('AccessTokenIssuedAt1795400000054')) await db.undoLastMigration({ transaction: 'each' });
    // sql-on-purpose: rows written before the migration, by the schema of then: a grant approved at 10:00,
    // its token of 11:00, a token its grant minted at 12:00, one minted at 13:00 by that grant's token, one by a direct token.
    const [person] = (await db.query(`INSERT INTO users (email, name) VALUES ('iat-054@example.com', 'I') RETURNING id`)) as Array<{ id: string }>;
    // sql-on-purpose: rows written before the migration, by the schema of then
    const [grant] = (await db.query(
      `INSERT INTO grants (user_id, client_id, grant_type, scope, created_at) VALUES ($1, 'prospect-cli', 'device_code', 'profile', '2026-05-01T10:00:00Z') RETURNING id`,
      [person!.id],
    )) as Array<{ id: string }>;
    // sql-on-purpose: rows written before the migration, by the schema of then
    const token = async (label: string, at: string, fields: { grantId?: string; mintedByGrantId?: string; mintedByTokenId?: string }) =>
      (
        (await db.query(
          `INSERT INTO access_tokens (token_hash, user_id, origin, label, grant_id, minted_by_grant_id, minted_by_token_id, created_at, expires_at)
           VALUES (sha256(convert_to($1::text, 'UTF8')), $2, 'direct', $1, $3, $4, $5, $6::timestamptz, $6::timestamptz + interval '1 day') RETURNING id`,
          [label, person!.id, fields.grantId ?? null, fields.mintedByGrantId ?? null, fields.mintedByTokenId ?? null, at],
        )) as Array<{ id: string }>
      )[0]!.id;
    const grantToken = await token('iat-grant', '2026-05-01T11:00:00Z', { grantId: grant!.id });
    await token('iat-by-grant', '2026-05-01T12:00:00Z', { mintedByGrantId: grant!.id });
    await token('iat-by-grant-token', '2026-05-01T13:00:00Z', { mintedByTokenId: grantToken });
    const direct = await token('iat-direct', '2026-05-01T14:00:00Z', {});
    await token('iat-by-direct', '2026-05-01T15:00:00Z', { mintedByTokenId: direct });
    await db.runMigrations({ transaction: 'each' });
    // sql-on-purpose: what the migration made of those rows
    const rows = (await db.query(`SELECT label, issued_at FROM access_tokens WHERE user_id = $1 ORDER BY label`, [person!.id])) as Array<{ label: string; issued_at: Date | null }>;
    expect(rows.map((r) => [r.label, r.issued_at?.toISOString() ?? null])).toEqual([
      ['iat-by-direct', '2026-05-01T14:00:00.000Z'],
      ['iat-by-grant', '2026-05-01T10:00:00.000Z'],
      ['iat-by-grant-token', '2026-05-01T10:00:00.000Z'],
      ['iat-direct', null],
      ['iat-grant', '2026-05-01T10:00:00.000Z'],
    ]);
    // sql-on-purpose: test rows out of the way of the other cases
    await db.query(`DELETE FROM users WHERE id = $1`, [person!.id]);
  });
  it('DevicePollSlots (055) moves each login’s last poll to an unlogged table of its own, which its login takes with it', async () => {
    // sql-on-purpose: the migrations table
    const applied = async () => ((await db.query(`SELECT name FROM migrations`)) as Array<{ name: string }>).map((m) => m.name);
    while ((await applied()).includes('DevicePollSlots1795400000055')) await db.undoLastMigration({ transaction: 'each' });
    // sql-on-purpose: rows written before the migration, by the schema of then: a login polled at 10:00, one never polled
    const logins = (await db.query(
      `INSERT INTO device_logins (device_code_hash, user_code, created_at, expires_at, client_id, scope, last_polled_at)
       VALUES (sha256('slot-055-a'), 'SLOT055A', now(), now() + interval '10 minutes', 'prospect-cli', 'profile', '2026-05-01T10:00:00Z'),
              (sha256('slot-055-b'), 'SLOT055B', now(), now() + interval '10 minutes', 'prospect-cli', 'profile', NULL)
       RETURNING id`,
    )) as Array<{ id: string }>;
    await db.runMigrations({ transaction: 'each' });
    // sql-on-purpose: what the migration made of those rows
    const slots = (await db.query(`SELECT device_login_id, last_polled_at FROM device_poll_slots WHERE device_login_id = ANY($1::uuid[])`, [logins.map((l) => l.id)])) as Array<{
      device_login_id: string;
      last_polled_at: Date;
    }>;
    expect(slots.map((r) => [r.device_login_id, r.last_polled_at.toISOString()])).toEqual([[logins[0]!.id, '2026-05-01T10:00:00.000Z']]);
    // sql-on-purpose: the schema: unlogged (no WAL; emptied by a crash or a failover, which only lets a poll through early)
    expect(await db.query(`SELECT relpersistence FROM pg_class WHERE relname = 'device_poll_slots'`)).toEqual([{ relpersistence: 'u' }]);
    // sql-on-purpose: test rows out of the way of the other cases, and the slot with them
    await db.query(`DELETE FROM device_logins WHERE id = ANY($1::uuid[])`, [logins.map((l) => l.id)]);
    // sql-on-purpose: what the delete left
    expect(await db.query(`SELECT count(*)::int AS n FROM device_poll_slots WHERE device_login_id = ANY($1::uuid[])`, [logins.map((l) => l.id)])).toEqual([{ n: 0 }]);
  });
});
