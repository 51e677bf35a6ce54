import { ROUTES } from '@prospect/contract';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { deviceLogins } from '../support/device-login-fixtures.js';
import { approve, countAuthEvents, createUser, startDeviceLogin } from '../support/fixtures.js';
import { get, post } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { accessTokens } from '../support/token-fixtures.js';

/**
 * Every change is written together with its audit event, or not at all: with the
 * audit table refusing writes, nothing it would have recorded happens.
 */
describe('audit events in the same transaction as their change', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp();
  });
  afterAll(() => api.close());

  /** How many rows each table it writes holds. */
  const rowCounts = async () => ({ logins: (await deviceLogins(api)).length, tokens: (await accessTokens(api)).length, events: await countAuthEvents(api, {}) });
  // sql-on-purpose: a CHECK constraint that refuses every write to the audit table
  const refuseAuditWrites = (on: boolean) =>
    api.dataSource.query(on ? `ALTER TABLE auth_events ADD CONSTRAINT refuse_all CHECK (false) NOT VALID` : `ALTER TABLE auth_events DROP CONSTRAINT refuse_all`);

  it('start, approve, issue and revoke leave no trace when their audit event cannot be written', async () => {
    const user = await createUser(api);
    const token = (await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct' })).accessToken;
    const pending = await startDeviceLogin(api);
    const before = await rowCounts();

    await refuseAuditWrites(true);
    try {
      expect((await post(api, ROUTES.deviceStart, {})).status).toBe(500);
      await expect(approve(api, pending.userCode, user)).rejects.toThrow();
      expect((await post(api, ROUTES.issueToken, {}, token)).status).toBe(500);
      expect((await post(api, ROUTES.logout, undefined, token)).status).toBe(500);
    } finally {
      await refuseAuditWrites(false);
    }

    expect(await rowCounts()).toEqual(before);
    const [{ status }] = await deviceLogins(api, { userCode: pending.userCode });
    expect(status).toBe('pending');
    expect((await get(api, ROUTES.me, token)).status).toBe(200); // not revoked
  });
});
