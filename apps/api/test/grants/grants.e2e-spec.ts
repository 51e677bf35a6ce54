import { ROUTES } from '@prospect/contract';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { deviceLogins } from '../support/device-login-fixtures.js';
import { waitFor } from '../support/eventually.js';
import { approve, approveInBrowser, createUser, poll, registerClient, startDeviceLogin, userByEmail } from '../support/fixtures.js';
import { grants } from '../support/grant-fixtures.js';
import { get, post } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens, refreshTokens } from '../support/token-fixtures.js';
import { signInAs } from '../support/web-client.js';
import { approveIn, authorizationParams, pkce, tokenRequest } from '../oauth/code-flow-support.js';

/**
 * Issue #43 item 1: a grant is a thing of its own (`grants`, grants/'s). A device login's approval
 * records one and the login points to it; the tokens hang off it; revoking it ends them all, and a
 * revoked grant issues nothing more, whatever became of its tokens.
 */
describe('a grant, the record of one approval', () => {
  let api: TestApp;
  beforeAll(async () => (api = await startTestApp()));
  afterAll(() => api?.close());

  const refresh = (refreshToken: string) => post(api, ROUTES.refresh, { refreshToken });

  /** A device login approved by a new person, not collected yet: the person, the login's codes and its grant's id. */
  async function approved() {
    const person = await createUser(api);
    const start = await startDeviceLogin(api);
    await approve(api, start.userCode, person);
    const [login] = await deviceLogins(api, { userCode: start.userCode });
    return { person, start, grantId: login!.grant_id! };
  }

  it('an approval records who approved what and how they proved it; the login points to it and its tokens hang off it', async () => {
    const { person, start, grantId } = await approved();
    const [grant] = await grants(api, { id: grantId });
    expect(grant).toEqual({
      id: grantId,
      user_id: person.id,
      client_id: 'prospect-cli',
      grant_type: 'device_code',
      scope: 'profile tokens orgs',
      admin_until: null,
      credential_epoch: 0,
      amr: ['pwd'],
      auth_time: null,
      second_factor: false,
      web_session: null,
      created_at: expect.any(Date),
      revoked_at: null,
    });
    expect((await poll(api, start.deviceCode)).body.status).toBe('authorized');
    expect(await accessTokens(api, { grantId })).toHaveLength(1);
    expect(await refreshTokens(api, { grantId })).toHaveLength(1);
  });

  it('approved on the device page, it keeps the approving session and when it proved its person', async () => {
    const start = await startDeviceLogin(api);
    const before = Date.now();
    const email = await approveInBrowser(api, start.userCode);
    const [login] = await deviceLogins(api, { userCode: start.userCode });
    const [grant] = await grants(api, { id: login!.grant_id! });
    expect(grant).toMatchObject({ user_id: (await userByEmail(api, email))!.id, amr: ['pwd'], web_session: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    // Signed up (and so signed in) just now, in this test.
    expect(grant!.auth_time!.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(grant!.auth_time!.getTime()).toBeLessThanOrEqual(grant!.created_at.getTime());
  });

  it('revoking the grant ends every token of it and marks it revoked', async () => {
    const { start, grantId } = await approved();
    const session = (await poll(api, start.deviceCode)).body;
    const renewed = (await refresh(session.refreshToken)).body;
    expect((await post(api, ROUTES.logout, undefined, renewed.accessToken)).status).toBe(204);
    expect((await grants(api, { id: grantId }))[0]!.revoked_at).toEqual(expect.any(Date));
    expect((await accessTokens(api, { grantId })).filter((token) => !token.revoked_at)).toEqual([]);
    expect((await refreshTokens(api, { grantId })).filter((token) => !token.revoked_at)).toEqual([]);
    const refused = await refresh(renewed.refreshToken);
    expect(refused.status).toBe(401);
    expect(refused.body.message).toMatch(/revoked/);
  });

  it('a revoked grant issues nothing more, even where a token of it was left live: no refresh, no redemption', async () => {
    const live = await approved();
    const session = (await poll(api, live.start.deviceCode)).body;
    const uncollected = await approved();
    // sql-on-purpose: a fault injected: the grants revoked without the token revocation that goes with it
    await api.dataSource.query(`UPDATE grants SET revoked_at = now() WHERE id = ANY ($1::uuid[])`, [[live.grantId, uncollected.grantId]]);
    expect((await refresh(session.refreshToken)).status).toBe(401);
    // …and the tokens left live end with it.
    expect((await refreshTokens(api, { grantId: live.grantId })).filter((token) => !token.revoked_at)).toEqual([]);
    expect((await accessTokens(api, { grantId: live.grantId })).filter((token) => !token.revoked_at)).toEqual([]);
    expect((await poll(api, uncollected.start.deviceCode)).body.status).not.toBe('authorized');
    expect(await accessTokens(api, { grantId: uncollected.grantId })).toEqual([]);
  });

  it('"sign out everywhere" revokes every grant of the person, an approval not collected yet included', async () => {
    const first = await approved();
    expect((await poll(api, first.start.deviceCode)).body.status).toBe('authorized');
    const second = await startDeviceLogin(api);
    await approve(api, second.userCode, first.person);
    await api.app.get(TokensService).revokeAllForUser(first.person.id);
    const mine = await grants(api, { userId: first.person.id });
    expect(mine).toHaveLength(2);
    expect(mine.map((grant) => grant.revoked_at)).toEqual([expect.any(Date), expect.any(Date)]);
    expect((await poll(api, second.deviceCode)).body.status).not.toBe('authorized');
  });
  // sql-on-purpose: how many statements of the database wait for a row's lock now
  const waitingForLocks = async () => (await api.dataSource.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n as number;

  it('"sign out everywhere" racing a redemption of the person\'s approval leaves nothing of it live', async () => {
    const { person, start, grantId } = await approved();
    // The interleaving, forced: the grant's row held, the redemption locks its login and waits for the grant;
    // "sign out everywhere" then revokes the person's tokens and waits for the login; the grant let go.
    const hold = api.dataSource.createQueryRunner();
    await hold.connect();
    await hold.startTransaction();
    try {
      // sql-on-purpose: a lock held from outside, to order the two transactions
      await hold.query(`SELECT id FROM grants WHERE id = $1 FOR UPDATE`, [grantId]);
      const redeeming = poll(api, start.deviceCode);
      await waitFor('the redemption to wait for the grant', async () => (await waitingForLocks()) >= 1);
      const signingOut = api.app.get(TokensService).revokeAllForUser(person.id);
      await waitFor('"sign out everywhere" to wait too', async () => (await waitingForLocks()) >= 2);
      await hold.commitTransaction();
      const [redeemed] = await Promise.all([redeeming, signingOut]);
      if (redeemed.body.status === 'authorized') expect((await get(api, ROUTES.me, redeemed.body.accessToken)).status).toBe(401);
      expect((await accessTokens(api, { grantId })).filter((token) => !token.revoked_at)).toEqual([]);
      expect((await refreshTokens(api, { grantId })).filter((token) => !token.revoked_at)).toEqual([]);
    } finally {
      if (hold.isTransactionActive) await hold.rollbackTransaction();
      await hold.release();
    }
  });

  it('"sign out everywhere", refreshes (twice each, the lost-answer path) and redemptions of one person all at once: no deadlock, no 500, nothing live after', async () => {
    const person = await createUser(api);
    const sessions = [];
    for (let i = 0; i < 4; i++) {
      const start = await startDeviceLogin(api);
      await approve(api, start.userCode, person);
      sessions.push((await poll(api, start.deviceCode)).body as { accessToken: string; refreshToken: string });
    }
    const uncollected = [];
    for (let i = 0; i < 4; i++) {
      const start = await startDeviceLogin(api);
      await approve(api, start.userCode, person);
      uncollected.push(start.deviceCode);
    }
    const answers = await Promise.all([
      ...sessions.flatMap((session) => [refresh(session.refreshToken), refresh(session.refreshToken)]),
      ...uncollected.map((deviceCode) => poll(api, deviceCode)),
      api.app.get(TokensService).revokeAllForUser(person.id).then(() => ({ status: 204, body: {} })),
      ...sessions.map((session) => refresh(session.refreshToken)),
    ]);
    for (const answer of answers) expect(answer.status).toBeLessThan(500);
    // Whatever was issued in the race ends with the sign-out: no live token of the person is left.
    const mine = await grants(api, { userId: person.id });
    for (const grant of mine) {
      expect((await accessTokens(api, { grantId: grant.id })).filter((token) => !token.revoked_at)).toEqual([]);
      expect((await refreshTokens(api, { grantId: grant.id })).filter((token) => !token.revoked_at)).toEqual([]);
    }
    for (const answer of answers) if (answer.body?.accessToken) expect((await get(api, ROUTES.me, answer.body.accessToken)).status).toBe(401);
  });
  it('"sign out everywhere" racing a code exchange leaves nothing of its grant live', async () => {
    const redirect = 'https://race.example.com/callback';
    await registerClient(api, { id: 'race-tool', name: 'Race Tool', allowedScopes: ['openid', 'profile'], redirectUris: [redirect] });
    const person = await createUser(api);
    const web = await signInAs(api, person.email, 'correct horse battery');
    const { verifier, challenge } = pkce();
    const code = (await approveIn(web, authorizationParams('race-tool', redirect, challenge, { scope: 'openid profile' }))).searchParams.get('code')!;
    // The interleaving, forced: the exchange, past its checks of the account, waits at its first token's
    // INSERT on a lock this test holds; "sign out everywhere" runs (or waits) beside it; the gate opens.
    const gate = api.dataSource.createQueryRunner();
    await gate.connect();
    // sql-on-purpose: a gate from outside, held by this test, which a trigger makes the exchange's first token wait for
    await gate.query(`SELECT pg_advisory_lock(4343043)`);
    // sql-on-purpose: fault injection: the gate, at the INSERT of an access token
    await api.dataSource.query(`CREATE FUNCTION test_gate_access_tokens() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock_shared(4343043); RETURN NEW; END $$`);
    // sql-on-purpose: fault injection: the gate, at the INSERT of an access token
    await api.dataSource.query(`CREATE TRIGGER test_gate_access_tokens BEFORE INSERT ON access_tokens FOR EACH ROW EXECUTE FUNCTION test_gate_access_tokens()`);
    try {
      const exchanging = tokenRequest(api, { grant_type: 'authorization_code', client_id: 'race-tool', code, redirect_uri: redirect, code_verifier: verifier });
      await waitFor('the exchange to wait at its first token', async () => (await waitingForLocks()) >= 1);
      let signedOut = false;
      const signingOut = api.app.get(TokensService).revokeAllForUser(person.id).then(() => (signedOut = true));
      await waitFor('"sign out everywhere" to end or to wait for the exchange', async () => signedOut || (await waitingForLocks()) >= 2);
      // sql-on-purpose: the gate opened
      await gate.query(`SELECT pg_advisory_unlock(4343043)`);
      const [exchanged] = await Promise.all([exchanging, signingOut]);
      expect(exchanged.status).toBeLessThan(500);
      const [grant] = await grants(api, { userId: person.id });
      if (grant) {
        expect((await accessTokens(api, { grantId: grant.id })).filter((token) => !token.revoked_at)).toEqual([]);
        expect((await refreshTokens(api, { grantId: grant.id })).filter((token) => !token.revoked_at)).toEqual([]);
      }
      if (exchanged.body.refresh_token) expect((await tokenRequest(api, { grant_type: 'refresh_token', client_id: 'race-tool', refresh_token: exchanged.body.refresh_token })).status).toBeGreaterThanOrEqual(400);
    } finally {
      // sql-on-purpose: the fault taken away
      await api.dataSource.query(`DROP TRIGGER IF EXISTS test_gate_access_tokens ON access_tokens`);
      // sql-on-purpose: the fault taken away
      await api.dataSource.query(`DROP FUNCTION IF EXISTS test_gate_access_tokens()`);
      await gate.release();
    }
  });
});
