/**
 * What the CLI's end-to-end specs read and arrange in the real API's data that neither its
 * services nor its own test fixtures (apps/api/test/support) offer as such: one place, so the
 * specs read as what they check.
 */
import { sha256 } from '../../../api/src/common/secrets.js';
import { TokensService } from '../../../api/src/tokens/tokens.service.js';
import { authEvents } from '../../../api/test/support/fixtures.js';
import type { TestApp } from '../../../api/test/support/test-app.js';

/** The events that tell how a session's family ended or went on: a refresh, a refresh token presented again, the family revoked. */
const FAMILY_EVENT_TYPES = new Set(['token.refresh', 'token.reuse', 'token.revoke_family']);

/** What the server recorded for the grant (the family) `accessToken` belongs to: its refreshes, reuses and revocations, oldest first. */
export async function familyEvents(api: TestApp, accessToken: string): Promise<string[]> {
  const family = (await api.app.get(TokensService).describe(accessToken))?.grantId;
  if (!family) throw new Error('familyEvents: not a token of a grant');
  const events = await authEvents(api, { detail: { deviceLoginId: family } });
  return events.map((event) => event.type).filter((type) => FAMILY_EVENT_TYPES.has(type));
}

/**
 * Ends an access token's lifetime a second ago by the server's clock, as an hour passing would
 * (the app never shortens a token, and this API runs on the real clock); its expiry as the server
 * now holds it.
 */
export async function expireAccessToken(api: TestApp, accessToken: string): Promise<Date> {
  await api.dataSource.query(`UPDATE access_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1`, [sha256(accessToken)]);
  const described = await api.app.get(TokensService).describe(accessToken);
  if (!described) throw new Error('expireAccessToken: no such token');
  return described.expiresAt;
}
