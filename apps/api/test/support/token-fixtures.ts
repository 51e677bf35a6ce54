import { sha256 } from '../../src/common/secrets.js';
import type { TestApp } from './test-app.js';

/*
 * The token tables as they are stored, for what TokensService does not show: every access token
 * of a person, a family or a label, revoked and expired ones included (the service lists a
 * session as one entry, and only the caller's), a family's refresh tokens, authorization codes
 * and the answers kept for an Idempotency-Key. SQL, kept here so the specs read as what they check.
 */

/** An access token's row as stored, without its hash. */
export interface StoredAccessToken {
  id: string;
  user_id: string;
  origin: string;
  label: string | null;
  scope: string | null;
  grant_id: string | null;
  minted_by_token_id: string | null;
  minted_by_grant_id: string | null;
  created_at: Date;
  expires_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/** The access tokens of `userId`, of a grant's family, with `label`, whose secret is `secret`, or of a grant of `clientId` (all of them when no filter is given), oldest first. */
export function accessTokens(
  api: TestApp,
  filter: { userId?: string; grantId?: string; label?: string; secret?: string; clientId?: string } = {},
): Promise<StoredAccessToken[]> {
  return api.dataSource.query(
    `SELECT id, user_id, origin, label, scope, grant_id, minted_by_token_id, minted_by_grant_id, created_at, expires_at, last_used_at, revoked_at
       FROM access_tokens
      WHERE ($1::uuid IS NULL OR user_id = $1) AND ($2::uuid IS NULL OR grant_id = $2) AND ($3::text IS NULL OR label = $3)
        AND ($4::bytea IS NULL OR token_hash = $4)
        AND ($5::text IS NULL OR grant_id IN (SELECT id FROM grants WHERE client_id = $5))
      ORDER BY created_at, id`,
    [filter.userId ?? null, filter.grantId ?? null, filter.label ?? null, filter.secret === undefined ? null : sha256(filter.secret), filter.clientId ?? null],
  );
}

/** A refresh token's row as stored, without its hash and its sealed successor. */
export interface StoredRefreshToken {
  id: string;
  grant_id: string;
  user_id: string;
  created_at: Date;
  expires_at: Date;
  family_expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
}

/** The refresh tokens of a grant's family, rotated and revoked ones included (every one when no family is given), oldest first. */
export function refreshTokens(api: TestApp, filter: { grantId?: string } = {}): Promise<StoredRefreshToken[]> {
  return api.dataSource.query(
    `SELECT id, grant_id, user_id, created_at, expires_at, family_expires_at, rotated_at, revoked_at
       FROM refresh_tokens WHERE ($1::uuid IS NULL OR grant_id = $1) ORDER BY created_at, id`,
    [filter.grantId ?? null],
  );
}

/** The access and refresh tokens of a grant's family that are not revoked, expired or not. */
export async function unrevokedFamilyTokens(api: TestApp, grantId: string): Promise<Array<{ kind: 'access' | 'refresh'; id: string }>> {
  const access = (await accessTokens(api, { grantId })).filter((token) => token.revoked_at === null);
  const refresh = (await refreshTokens(api, { grantId })).filter((token) => token.revoked_at === null);
  return [...access.map(({ id }) => ({ kind: 'access' as const, id })), ...refresh.map(({ id }) => ({ kind: 'refresh' as const, id }))];
}

/**
 * Adds `count` access tokens of `userId` that expired 40 days ago by the database's clock, as a
 * long outage of the purge leaves them: the app issues no token in the past, and a purge run in
 * another process reads the real clock, not the test's.
 */
export async function pileUpEndedAccessTokens(api: TestApp, userId: string, count: number): Promise<void> {
  await api.dataSource.query(
    `INSERT INTO access_tokens (token_hash, user_id, origin, created_at, expires_at)
     SELECT sha256(convert_to(gen_random_uuid()::text, 'UTF8')), $1, 'direct', now() - interval '50 days', now() - interval '40 days'
       FROM generate_series(1, $2)`,
    [userId, count],
  );
}

/** The authorization codes issued to `userId` (to anyone when no user is given), used ones included. */
export function authorizationCodes(api: TestApp, filter: { userId?: string } = {}): Promise<Array<{ id: string; client_id: string; user_id: string; used_at: Date | null }>> {
  return api.dataSource.query(`SELECT id, client_id, user_id, used_at FROM authorization_codes WHERE ($1::uuid IS NULL OR user_id = $1) ORDER BY created_at, id`, [
    filter.userId ?? null,
  ]);
}

/** The answers kept for an Idempotency-Key of any of `userIds` (whose callers they were). */
export function idempotencyKeysOf(api: TestApp, userIds: string[]): Promise<Array<{ user_id: string; created_at: Date }>> {
  return api.dataSource.query(`SELECT user_id, created_at FROM idempotency_keys WHERE user_id = ANY($1::uuid[]) ORDER BY created_at`, [userIds]);
}
