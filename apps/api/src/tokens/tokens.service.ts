import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { ACCESS_TOKEN_PREFIX } from '@prospect/contract';
import type { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service.js';
import { notFound } from '../common/api-exception.js';
import { BackgroundWrites } from '../common/background-writes.js';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { Sql } from '../database/sql.js';
import type { UserRole } from '../users/user.entity.js';
import { AccessToken, type TokenOrigin } from './access-token.entity.js';
import type { AuthPrincipal } from './auth-principal.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

/** Why a token was refused; told to the client in `error_description` (RFC 6750 §3). */
export type InvalidTokenReason = 'unknown' | 'expired' | 'revoked';

export class InvalidTokenError extends Error {
  constructor(readonly reason: InvalidTokenReason) {
    super(`token ${reason}`);
  }
}

/** `lastUsedAt` is refreshed at most this often, so verification stays a read. */
export const LAST_USED_RESOLUTION_MS = 60_000;

export interface IssueTokenInput {
  userId: string;
  origin: TokenOrigin;
  label?: string | null;
  /** Defaults to CLI_TOKEN_TTL_SECONDS; capped at ACCESS_TOKEN_MAX_TTL_SECONDS. */
  ttlSeconds?: number;
  ip?: string | null;
  deviceLoginId?: string | null;
  /** An admin issuing for someone else: recorded in the audit event. */
  issuedBy?: string;
}

export interface IssuedToken {
  /** The only copy of the secret: returned once, never stored. */
  accessToken: string;
  id: string;
  expiresAt: Date;
}

interface TokenRow {
  token_id: string;
  expires_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
  user_id: string;
  email: string;
  name: string;
  role: UserRole;
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

@Injectable()
export class TokensService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly sql: Sql,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly background: BackgroundWrites,
    private readonly cache: VerifiedTokenCache,
  ) {}

  /** Issues a token and records it, in `manager`'s transaction or in one of its own. */
  issue(input: IssueTokenInput, manager?: EntityManager): Promise<IssuedToken> {
    return manager ? this.issueIn(manager, input) : this.db.transaction((tx) => this.issueIn(tx, input));
  }

  private async issueIn(manager: EntityManager, input: IssueTokenInput): Promise<IssuedToken> {
    const ttl = Math.min(input.ttlSeconds ?? this.config.cliTokenTtlSeconds, this.config.accessTokenMaxTtlSeconds);
    const now = this.clock.now();
    const accessToken = generateSecret(ACCESS_TOKEN_PREFIX);
    const expiresAt = new Date(now.getTime() + ttl * 1000);
    const result = await manager.insert(AccessToken, {
      tokenHash: sha256(accessToken),
      userId: input.userId,
      origin: input.origin,
      label: input.label ?? null,
      deviceLoginId: input.deviceLoginId ?? null,
      createdIp: input.ip ?? null,
      createdAt: now,
      expiresAt,
    });
    const id = (result.identifiers[0] as { id: string }).id;
    const detail = { tokenId: id, origin: input.origin, ...(input.issuedBy ? { issuedBy: input.issuedBy } : {}) };
    await this.audit.record('token.issue', { userId: input.userId, ip: input.ip, detail }, manager);
    return { accessToken, id, expiresAt };
  }

  /**
   * The hot path of every CLI round trip. A cached verification still has its
   * expiry checked; otherwise one indexed read by hash, joined to its user.
   * Throws InvalidTokenError saying why a token is refused.
   */
  async verify(rawToken: string): Promise<AuthPrincipal> {
    if (!looksLikeSecret(rawToken, ACCESS_TOKEN_PREFIX)) throw new InvalidTokenError('unknown');
    const hash = sha256(rawToken);
    const now = this.clock.now();
    const cacheKey = this.cache.enabled ? hash.toString('base64') : undefined;
    if (cacheKey) {
      const hit = this.cache.get(cacheKey);
      if (hit) {
        if (hit.principal.expiresAt.getTime() <= now.getTime()) throw new InvalidTokenError('expired');
        if (this.isStale(hit.lastUsedAt, now)) {
          hit.lastUsedAt = now.getTime();
          this.touch(hit.principal.tokenId!, now);
        }
        return hit.principal;
      }
    }
    const readEpoch = this.cache.epoch;
    const [row] = await this.sql.rows<TokenRow>(
      `SELECT t.id AS token_id, t.expires_at, t.revoked_at, t.last_used_at,
              u.id AS user_id, u.email, u.name, u.role
         FROM access_tokens t JOIN users u ON u.id = t.user_id
        WHERE t.token_hash = $1`,
      [hash],
    );
    if (!row) throw new InvalidTokenError('unknown');
    if (row.revoked_at) throw new InvalidTokenError('revoked');
    if (row.expires_at.getTime() <= now.getTime()) throw new InvalidTokenError('expired');
    let lastUsedAt = row.last_used_at?.getTime() ?? null;
    if (this.isStale(lastUsedAt, now)) {
      lastUsedAt = now.getTime();
      this.touch(row.token_id, now);
    }
    const principal: AuthPrincipal = {
      user: { id: row.user_id, email: row.email, name: row.name, role: row.role },
      tokenId: row.token_id,
      expiresAt: row.expires_at,
      via: 'bearer',
    };
    if (cacheKey) this.cache.set(cacheKey, principal, lastUsedAt, readEpoch);
    return principal;
  }

  /** What is known of an access token, active or not; null for one that does not exist. */
  async describe(rawToken: string): Promise<AccessTokenDescription | null> {
    if (!looksLikeSecret(rawToken, ACCESS_TOKEN_PREFIX)) return null;
    const [row] = await this.sql.rows<AccessTokenDescription>(
      `SELECT t.id, t.user_id AS "userId", u.email, t.device_login_id AS "deviceLoginId", d.client_id AS "clientId", d.scope,
              t.created_at AS "createdAt", t.expires_at AS "expiresAt", (t.revoked_at IS NULL AND t.expires_at > $2) AS active
         FROM access_tokens t JOIN users u ON u.id = t.user_id LEFT JOIN device_logins d ON d.id = t.device_login_id
        WHERE t.token_hash = $1`,
      [sha256(rawToken), this.clock.now()],
    );
    return row ?? null;
  }

  private isStale(lastUsedAt: number | null, now: Date): boolean {
    return lastUsedAt === null || now.getTime() - lastUsedAt >= LAST_USED_RESOLUTION_MS;
  }

  /** Records use without making every verification a write: at most once per resolution. */
  private touch(tokenId: string, now: Date): void {
    this.background.run('record token use', () =>
      this.sql.rows(
        `UPDATE access_tokens SET last_used_at = $2
          WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`,
        [tokenId, now, new Date(now.getTime() - LAST_USED_RESOLUTION_MS)],
      ),
    );
  }

  /**
   * Revokes one token of this user; revoking twice is harmless. A token of a device login
   * takes its whole family with it (every access and refresh token of that login), so a
   * revoked session cannot come back through its refresh token.
   */
  async revokeForUser(userId: string, tokenId: string, ip?: string | null): Promise<void> {
    const [token] = await this.sql.rows<{ device_login_id: string | null }>(`SELECT device_login_id FROM access_tokens WHERE id = $1 AND user_id = $2`, [
      tokenId,
      userId,
    ]);
    if (!token) throw notFound('No such token.');
    if (token.device_login_id) {
      await this.revokeFamily(token.device_login_id, 'revoked', ip);
      return;
    }
    // The revocation and its audit event in one statement; of racing revocations only the first revokes (and is audited).
    await this.sql.rows(
      `WITH revoked AS (
         UPDATE access_tokens SET revoked_at = $3 WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING id
       )
       INSERT INTO auth_events (type, user_id, ip, detail, created_at)
       SELECT 'token.revoke', $2, $4, jsonb_build_object('tokenId', revoked.id), $3 FROM revoked`,
      [tokenId, userId, this.clock.now(), ip ?? null],
    );
    // At once on this instance; the database trigger tells the others.
    this.cache.evictToken(tokenId);
  }

  /**
   * Revokes a family: every access and refresh token descended from one device login, with
   * one audit event, in one statement. For a logout, a revoked session on the tokens page, a
   * replayed device code and a reused refresh token. Returns how many access tokens it revoked.
   */
  async revokeFamily(deviceLoginId: string, reason: string, ip?: string | null, manager?: EntityManager): Promise<number> {
    if (!manager) return this.db.transaction((tx) => this.revokeFamily(deviceLoginId, reason, ip, tx));
    // The family's lock, as a rotation takes it (RefreshTokensService.refresh): a pair being
    // written now is committed before the statement below looks, and so revoked with the rest.
    await manager.query(`SELECT id FROM device_logins WHERE id = $1 FOR UPDATE`, [deviceLoginId]);
    const [row] = (await manager.query(
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
      [deviceLoginId, this.clock.now(), ip ?? null, reason],
    )) as Array<{ ids: string[] }>;
    // At once on this instance; the database trigger tells the others.
    for (const id of row?.ids ?? []) this.cache.evictToken(id);
    return row?.ids.length ?? 0;
  }

  /**
   * "Sign out everywhere": every live token of this user, refresh tokens too, with one audit
   * event per long-lived token and per session; returns how many of those it ended. The
   * user's families are locked first, as revokeFamily does, so no rotation slips past.
   */
  async revokeAllForUser(userId: string, ip?: string | null): Promise<number> {
    const [{ ended }] = await this.db.transaction(async (tx) => {
      await tx.query(
        `SELECT id FROM device_logins WHERE id IN (SELECT device_login_id FROM refresh_tokens WHERE user_id = $1 AND revoked_at IS NULL) ORDER BY id FOR UPDATE`,
        [userId],
      );
      return (await tx.query(
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
        [userId, this.clock.now(), ip ?? null],
      )) as Array<{ ended: number }>;
    });
    this.cache.evictUser(userId);
    return ended;
  }

  /**
   * The caller's tokens, newest first, without secrets. A device session is one entry however
   * often it was refreshed: its newest access token, since when it is signed in, and until when
   * its refresh token keeps it alive.
   */
  async listForUser(userId: string): Promise<TokenListing[]> {
    const rows = (await this.db.query(
      `SELECT * FROM (
         SELECT DISTINCT ON (COALESCE(t.device_login_id, t.id))
                t.id, t.label, t.origin, d.client_name, d.hostname, d.user_agent, t.created_ip,
                COALESCE(d.redeemed_at, t.created_at) AS created_at,
                GREATEST(t.expires_at, r.expires_at) AS expires_at,
                GREATEST(t.last_used_at, CASE WHEN t.created_at > d.redeemed_at THEN t.created_at END) AS last_used_at,
                t.revoked_at
           FROM access_tokens t
           LEFT JOIN device_logins d ON d.id = t.device_login_id
           LEFT JOIN LATERAL (
             SELECT max(expires_at) AS expires_at FROM refresh_tokens
              WHERE device_login_id = t.device_login_id AND revoked_at IS NULL AND rotated_at IS NULL
           ) r ON true
          WHERE t.user_id = $1
          ORDER BY COALESCE(t.device_login_id, t.id), t.created_at DESC
       ) latest ORDER BY created_at DESC, id`,
      [userId],
    )) as Array<Record<string, never>>;
    return rows.map((r) => ({
      id: r.id,
      label: r.label,
      origin: r.origin,
      clientName: r.client_name,
      hostname: r.hostname,
      userAgent: r.user_agent,
      createdIp: r.created_ip,
      createdAt: r.created_at,
      expiresAt: r.expires_at,
      lastUsedAt: r.last_used_at,
      revokedAt: r.revoked_at,
    }));
  }
}
