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
  /** Defaults to ACCESS_TOKEN_TTL_SECONDS; capped at ACCESS_TOKEN_MAX_TTL_SECONDS. */
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
    const ttl = Math.min(input.ttlSeconds ?? this.config.accessTokenTtlSeconds, this.config.accessTokenMaxTtlSeconds);
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

  /** Revokes one token of this user; revoking twice is harmless. */
  async revokeForUser(userId: string, tokenId: string, ip?: string | null): Promise<void> {
    // The revocation and its audit event in one statement.
    const found = await this.sql.rows<{ id: string }>(
      `WITH revoked AS (
         UPDATE access_tokens SET revoked_at = COALESCE(revoked_at, $3) WHERE id = $1 AND user_id = $2 RETURNING id
       )
       INSERT INTO auth_events (type, user_id, ip, detail, created_at)
       SELECT 'token.revoke', $2, $4, jsonb_build_object('tokenId', revoked.id), $3 FROM revoked
       RETURNING detail ->> 'tokenId' AS id`,
      [tokenId, userId, this.clock.now(), ip ?? null],
    );
    if (!found.length) throw notFound('No such token.');
    // At once on this instance; the database trigger tells the others.
    this.cache.evictToken(tokenId);
  }

  /** Revokes every live token of this user ("sign out everywhere"), each with its audit event; returns how many. */
  async revokeAllForUser(userId: string, ip?: string | null): Promise<number> {
    const revoked = await this.sql.rows<{ id: string }>(
      `WITH revoked AS (
         UPDATE access_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 RETURNING id
       )
       INSERT INTO auth_events (type, user_id, ip, detail, created_at)
       SELECT 'token.revoke', $1, $3, jsonb_build_object('tokenId', revoked.id, 'reason', 'signed out everywhere'), $2 FROM revoked
       RETURNING detail ->> 'tokenId' AS id`,
      [userId, this.clock.now(), ip ?? null],
    );
    this.cache.evictUser(userId);
    return revoked.length;
  }

  /** Revokes whatever token a device login issued (replayed device codes). */
  async revokeIssuedByDeviceLogin(deviceLoginId: string, manager: EntityManager = this.db.manager): Promise<string[]> {
    const [rows] = (await manager.query(
      `UPDATE access_tokens SET revoked_at = $2 WHERE device_login_id = $1 AND revoked_at IS NULL RETURNING id, user_id`,
      [deviceLoginId, this.clock.now()],
    )) as [Array<{ id: string; user_id: string }>, number];
    for (const row of rows) {
      this.cache.evictToken(row.id);
      await this.audit.record('token.revoke', { userId: row.user_id, detail: { tokenId: row.id, reason: 'device code replayed' } }, manager);
    }
    return rows.map((r) => r.id);
  }

  /** The caller's tokens, newest first, without secrets. */
  async listForUser(userId: string): Promise<TokenListing[]> {
    const rows = (await this.db.query(
      `SELECT t.id, t.label, t.origin, d.client_name, d.hostname, d.user_agent, t.created_ip, t.created_at, t.expires_at,
              t.last_used_at, t.revoked_at
         FROM access_tokens t LEFT JOIN device_logins d ON d.id = t.device_login_id
        WHERE t.user_id = $1 ORDER BY t.created_at DESC, t.id`,
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
