import { ROUTES } from '@prospect/contract';
import { REPLY_WINDOW_SECONDS } from '../../src/device-login/device-login.service.js';
import { RefusedTokens } from '../../src/auth/refused-tokens.js';
import { FakeClock } from '../support/fake-clock.js';
import { approve, authEvents, createUser, poll, startDeviceLogin } from '../support/fixtures.js';
import { get, post } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** A raw token or device code lives in one HTTP response and the user's session file: nowhere else. */
describe('secrets at rest and in logs', () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ clock });
  });
  afterAll(() => api.close());

  it('stores no raw token or device code in any table, and logs none', async () => {
    const user = await createUser(api);
    const secrets: string[] = [];

    const start = await startDeviceLogin(api);
    secrets.push(start.deviceCode);
    await poll(api, start.deviceCode);
    await approve(api, start.userCode, user);
    const authorized = await poll(api, start.deviceCode);
    secrets.push(authorized.body.accessToken, authorized.body.refreshToken);
    await get(api, ROUTES.me, authorized.body.accessToken);
    // A rotation keeps the successor pair sealed until the successor is used: nothing of it readable either.
    const refreshed = await post(api, ROUTES.refresh, { refreshToken: authorized.body.refreshToken });
    secrets.push(refreshed.body.accessToken, refreshed.body.refreshToken);
    const issued = await post(api, ROUTES.issueToken, { label: 'x' }, authorized.body.accessToken);
    secrets.push(issued.body.accessToken);
    await post(api, ROUTES.logout, undefined, issued.body.accessToken);
    await get(api, ROUTES.me, issued.body.accessToken); // a failed verification, audited…
    await api.app.get(RefusedTokens).flush(); // …in the next batch
    clock.advanceSeconds(REPLY_WINDOW_SECONDS);
    await poll(api, start.deviceCode); // a replay, audited

    // sql-on-purpose: every table of the schema, to search all that is stored
    const tables: Array<{ table_name: string }> = await api.dataSource.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`,
    );
    let dump = '';
    for (const { table_name } of tables) {
      // sql-on-purpose: every row at rest, searched for the raw secrets
      const rows = await api.dataSource.query(`SELECT * FROM "${table_name}"`);
      // bytea columns come back as Buffers: dump them as text too, so nothing hides there.
      dump += JSON.stringify(rows, (_k, v: unknown) => {
        const buffer = v as { type?: string; data?: number[] } | null;
        return buffer?.type === 'Buffer' && buffer.data ? Buffer.from(buffer.data).toString('latin1') : v;
      });
    }
    const events = await authEvents(api, {});
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['device.start', 'device.approve', 'token.issue', 'device.redeem', 'token.refresh', 'token.revoke', 'token.verify_failed', 'device.replay', 'token.revoke_family']),
    );

    const logs = api.logs();
    expect(logs).toContain('"url":"/api/cli/auth/me"'); // the request log is there…
    for (const secret of secrets) {
      expect(dump).not.toContain(secret);
      expect(dump).not.toContain(secret.slice(5, 25));
      expect(logs).not.toContain(secret); // …without the secrets
    }
  });
});
