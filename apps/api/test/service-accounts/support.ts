import type { ServiceAccountScope } from '@prospect/contract';
import { Clock } from '../../src/common/clock.js';
import { request } from '../support/http.js';
import { createOrganization, personWithToken } from '../support/organization-fixtures.js';
import type { TestApp } from '../support/test-app.js';

/**
 * The real time, moved forward when a test says so: openid-client signs its assertions with the
 * machine's clock, so the API's must follow it, and an expiry is still reached without waiting.
 */
export class ShiftedClock extends Clock {
  private offsetMs = 0;
  override now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advanceSeconds(seconds: number): void {
    this.offsetMs += seconds * 1000;
  }
}

/** An organization with its owner (an `orgs` token), through the API. */
export async function organizationWithOwner(api: TestApp) {
  const owner = await personWithToken(api);
  const slug = await createOrganization(api, owner);
  return { owner, slug };
}

/** A service account of `slug`, created by its owner through the API. */
export async function createServiceAccount(api: TestApp, slug: string, ownerToken: string, scopes: ServiceAccountScope[] = ['profile', 'orgs'], name = 'nightly sync') {
  const res = await request(api, 'POST', `/api/orgs/${slug}/service-accounts`, { json: { name, scopes }, token: ownerToken });
  if (res.status !== 201) throw new Error(`creating a service account: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; clientId: string; name: string; scopes: string[] };
}

/** A new client secret of the account (shown once). */
export async function createSecret(api: TestApp, slug: string, ownerToken: string, accountId: string, expiresInDays?: number) {
  const res = await request(api, 'POST', `/api/orgs/${slug}/service-accounts/${accountId}/secrets`, { json: expiresInDays === undefined ? {} : { expiresInDays }, token: ownerToken });
  if (res.status !== 201) throw new Error(`creating a secret: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; clientSecret: string; expiresAt: string | null };
}

/** The client credentials grant with client_secret_post, as a form; the raw answer. */
export const secretPost = (api: TestApp, clientId: string, clientSecret: string, extra: Record<string, string> = {}, headers: Record<string, string> = {}) =>
  request(api, 'POST', '/oauth/token', {
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, ...extra }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });
