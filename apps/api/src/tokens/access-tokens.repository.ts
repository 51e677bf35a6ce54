import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { Sql } from '../database/sql.js';
import type { UserRole } from '../users/user.entity.js';
import { AccessToken, type TokenOrigin } from './access-token.entity.js';

/** An access token joined to its user, as verification reads it. */
export interface TokenForVerification {
  tokenId: string;
  expiresAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  user: { id: string; email: string; name: string; role: UserRole };
  /** The scope its sign-in was granted (its device login's); null for a token created directly, which has the CLI's. */
  scope: string | null;
  /** An administrator disabled its user. */
  userDisabled: boolean;
}

/** An access token as introspection and revocation see it (RFC 7662, RFC 7009). */
export interface AccessTokenDescription {
  id: string;
  userId: string;
  email: string;
  /** Its family, for a token of a device login. */
  deviceLoginId: string | null;
  /** The OAuth client of its device login; null for a token created directly. */
  clientId: string | null;
  scope: string | null;
  createdAt: Date;
  expiresAt: Date;
  active: boolean;
}

export interface TokenListing {
  id: string;
  label: string | null;
  origin: TokenOrigin;
  clientName: string | null;
  hostname: string | null;
  /** The program that started the device login that issued it. */
  userAgent: string | null;
  createdIp: string | null;
  createdAt: Date;
  expiresAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface NewAccessToken {
  tokenHash: Buffer;
  userId: string;
  origin: TokenOrigin;
  label: string | null;
  deviceLoginId: string | null;
  createdIp: string | null;
  createdAt: Date;
  expiresAt: Date;
}

/**
 * Every statement on `access_tokens`, and the revocations of a family (a device login's access
 * and refresh tokens), which are one statement across both tables with their audit event.
 * Verification and its `last_used_at` write are the hot path of every CLI call: named prepared
 * statements on the pool (Sql); the rest is TypeORM.
 */
@Injectable()
export class AccessTokensRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly sql: Sql,
  ) {}

  async insert(manager: EntityManager, token: NewAccessToken): Promise<string> {
    const result = await manager.insert(AccessToken, token);
    return (result.identifiers[0] as { id: string }).id;
  }

  async findForVerification(hash: Buffer): Promise<TokenForVerification | undefined> {
    const [row] = await this.sql.rows<{
      token_id: string;
      expires_at: Date;
      revoked_at: Date | null;
      last_used_at: Date | null;
      user_id: string;
      email: string;
      name: string;
      role: UserRole;
      scope: string | null;
      disabled: boolean;
    }>(
      `SELECT t.id AS token_id, t.expires_at, t.revoked_at, t.last_used_at,
              u.id AS user_id, u.email, u.name, u.role, d.scope, u.disabled_at IS NOT NULL AS disabled
         FROM access_tokens t JOIN users u ON u.id = t.user_id
         LEFT JOIN device_logins d ON d.id = t.device_login_id
        WHERE t.token_hash = $1`,
      [hash],
    );
    if (!row) return undefined;
    return {
      tokenId: row.token_id,
      expiresAt: row.expires_at,
      revokedAt: row.revoked_at,
      lastUsedAt: row.last_used_at,
      user: { id: row.user_id, email: row.email, name: row.name, role: row.role },
      scope: row.scope,
      userDisabled: row.disabled,
    };
  }

  /** Records use unless a use at or after `staleBefore` is recorded already. */
  async recordUse(tokenId: string, now: Date, staleBefore: Date): Promise<void> {
    await this.sql.rows(
      `UPDATE access_tokens SET last_used_at = $2
        WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`,
      [tokenId, now, staleBefore],
    );
  }

  async describe(hash: Buffer, now: Date): Promise<AccessTokenDescription | undefined> {
    const [row] = await this.sql.rows<AccessTokenDescription>(
      `SELECT t.id, t.user_id AS "userId", u.email, t.device_login_id AS "deviceLoginId", d.client_id AS "clientId", d.scope,
              t.created_at AS "createdAt", t.expires_at AS "expiresAt", (t.revoked_at IS NULL AND t.expires_at > $2) AS active
         FROM access_tokens t JOIN users u ON u.id = t.user_id LEFT JOIN device_logins d ON d.id = t.device_login_id
        WHERE t.token_hash = $1`,
      [hash, now],
    );
    return row;
  }

  /** The token of this user, with its family if it has one; undefined for another's or none. */
  async findOwned(tokenId: string, userId: string): Promise<{ deviceLoginId: string | null } | undefined> {
    return (await this.db.getRepository(AccessToken).findOne({ select: { id: true, deviceLoginId: true }, where: { id: tokenId, userId } })) ?? undefined;
  }

  /** Revokes one token and records it, in one statement; of racing revocations only the first does (and is audited): 1 for that one, else 0. */
  revokeOne(tokenId: string, userId: string, now: Date, ip: string | null): Promise<number> {
    return this.sql.count(
      `WITH revoked AS (
         UPDATE access_tokens SET revoked_at = $3 WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING id
       )
       INSERT INTO auth_events (type, user_id, ip, detail, created_at)
       SELECT 'token.revoke', $2, $4, jsonb_build_object('tokenId', revoked.id), $3 FROM revoked`,
      [tokenId, userId, now, ip],
    );
  }

  /**
   * The family's lock: its device login row. A rotation (RefreshTokensRepository) and every
   * revocation take it first, so a pair being written is committed before a revocation looks.
   */
  async lockFamily(tx: EntityManager, deviceLoginId: string): Promise<void> {
    await this.sql.rows(`SELECT id FROM device_logins WHERE id = $1 FOR UPDATE`, [deviceLoginId], tx);
  }

  /** Revokes every live access and refresh token of a family with one audit event; the ids of the access tokens it revoked. */
  async revokeFamily(tx: EntityManager, deviceLoginId: string, now: Date, ip: string | null, reason: string): Promise<string[]> {
    const [row] = await this.sql.rows<{ ids: string[] }>(
      `WITH a AS (
         UPDATE access_tokens SET revoked_at = $2 WHERE device_login_id = $1 AND revoked_at IS NULL RETURNING id
       ), r AS (
         UPDATE refresh_tokens SET revoked_at = $2, successor_sealed = NULL WHERE device_login_id = $1 AND revoked_at IS NULL RETURNING id
       )
       INSERT INTO auth_events (type, user_id, ip, detail, created_at)
       SELECT 'token.revoke_family', d.decided_by_user_id, $3,
              jsonb_build_object('deviceLoginId', d.id, 'reason', $4::text,
                                 'accessTokens', (SELECT count(*) FROM a), 'refreshTokens', (SELECT count(*) FROM r)), $2
         FROM device_logins d WHERE d.id = $1
       RETURNING (SELECT coalesce(array_agg(id), '{}') FROM a) AS ids`,
      [deviceLoginId, now, ip, reason],
      tx,
    );
    return row?.ids ?? [];
  }

  /** Every family of the user that still has a live refresh token, locked in a fixed order. */
  async lockFamiliesOfUser(tx: EntityManager, userId: string): Promise<void> {
    await this.sql.rows(
      `SELECT id FROM device_logins WHERE id IN (SELECT device_login_id FROM refresh_tokens WHERE user_id = $1 AND revoked_at IS NULL) ORDER BY id FOR UPDATE`,
      [userId],
      tx,
    );
  }

  /**
   * Revokes every live token of the user, refresh tokens too, with one audit event per long-lived
   * token and per session; returns how many events (tokens and sessions) it ended.
   */
  async revokeAllOfUser(tx: EntityManager, userId: string, now: Date, ip: string | null): Promise<number> {
    const [{ ended }] = await this.sql.rows<{ ended: number }>(
      `WITH a AS (
         UPDATE access_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 RETURNING id, device_login_id
       ), r AS (
         UPDATE refresh_tokens SET revoked_at = $2, successor_sealed = NULL WHERE user_id = $1 AND revoked_at IS NULL RETURNING device_login_id
       ), sessions AS (
         SELECT device_login_id AS id FROM a WHERE device_login_id IS NOT NULL UNION SELECT device_login_id FROM r
       ), events AS (
         INSERT INTO auth_events (type, user_id, ip, detail, created_at)
         SELECT 'token.revoke', $1, $3, jsonb_build_object('tokenId', a.id, 'reason', 'signed out everywhere'), $2 FROM a WHERE a.device_login_id IS NULL
         UNION ALL
         SELECT 'token.revoke_family', $1, $3, jsonb_build_object('deviceLoginId', s.id, 'reason', 'signed out everywhere'), $2 FROM sessions s
         RETURNING 1
       )
       SELECT count(*)::int AS ended FROM events`,
      [userId, now, ip],
      tx,
    );
    return ended;
  }

  /**
   * The user's tokens, newest first, without secrets. A device session is one entry however
   * often it was refreshed: its newest access token, since when it is signed in, and until when
   * its refresh token keeps it alive.
   */
  listForUser(userId: string): Promise<TokenListing[]> {
    return this.sql.rows<TokenListing>(
      `SELECT * FROM (
         SELECT DISTINCT ON (COALESCE(t.device_login_id, t.id))
                t.id, t.label, t.origin, d.client_name AS "clientName", d.hostname, d.user_agent AS "userAgent", t.created_ip AS "createdIp",
                COALESCE(d.redeemed_at, t.created_at) AS "createdAt",
                GREATEST(t.expires_at, r.expires_at) AS "expiresAt",
                GREATEST(t.last_used_at, CASE WHEN t.created_at > d.redeemed_at THEN t.created_at END) AS "lastUsedAt",
                t.revoked_at AS "revokedAt"
           FROM access_tokens t
           LEFT JOIN device_logins d ON d.id = t.device_login_id
           LEFT JOIN LATERAL (
             SELECT max(expires_at) AS expires_at FROM refresh_tokens
              WHERE device_login_id = t.device_login_id AND revoked_at IS NULL AND rotated_at IS NULL
           ) r ON true
          WHERE t.user_id = $1
          ORDER BY COALESCE(t.device_login_id, t.id), t.created_at DESC
       ) latest ORDER BY "createdAt" DESC, id`,
      [userId],
    );
  }

  /** At most `limit` tokens expired or revoked before `before` (retention); how many. */
  deleteEndedBefore(tx: EntityManager, before: Date, limit: number): Promise<number> {
    return this.sql.count(`DELETE FROM access_tokens WHERE id IN (SELECT id FROM access_tokens WHERE expires_at < $1 OR revoked_at < $1 LIMIT $2)`, [before, limit], tx);
  }
}
