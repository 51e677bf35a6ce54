import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { ACCESS_TOKEN_PREFIX } from '@prospect/contract';
import type { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service.js';
import { notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../metrics/metrics.js';
import type { TokenOrigin } from './access-token.entity.js';
import { type AccessTokenDescription, AccessTokensRepository, type TokenListing } from './access-tokens.repository.js';
import { TokenRevocations } from './token-revocations.js';

export type { AccessTokenDescription, TokenListing } from './access-tokens.repository.js';

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

@Injectable()
export class TokensService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly accessTokens: AccessTokensRepository,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly revocations: TokenRevocations,
    private readonly metrics: Metrics,
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
    const id = await this.accessTokens.insert(manager, {
      tokenHash: sha256(accessToken),
      userId: input.userId,
      origin: input.origin,
      label: input.label ?? null,
      deviceLoginId: input.deviceLoginId ?? null,
      createdIp: input.ip ?? null,
      createdAt: now,
      expiresAt,
    });
    const detail = { tokenId: id, origin: input.origin, ...(input.issuedBy ? { issuedBy: input.issuedBy } : {}) };
    await this.audit.record('token.issue', { userId: input.userId, ip: input.ip, detail }, manager);
    this.metrics.token('issued');
    return { accessToken, id, expiresAt };
  }

  /** What is known of an access token, active or not; null for one that does not exist. */
  async describe(rawToken: string): Promise<AccessTokenDescription | null> {
    if (!looksLikeSecret(rawToken, ACCESS_TOKEN_PREFIX)) return null;
    return (await this.accessTokens.describe(sha256(rawToken), this.clock.now())) ?? null;
  }

  /**
   * Revokes one token of this user; revoking twice is harmless. A token of a device login
   * takes its whole family with it (every access and refresh token of that login), so a
   * revoked session cannot come back through its refresh token.
   */
  async revokeForUser(userId: string, tokenId: string, ip?: string | null): Promise<void> {
    const token = await this.accessTokens.findOwned(tokenId, userId);
    if (!token) throw notFound('No such token.');
    if (token.deviceLoginId) {
      await this.revokeFamily(token.deviceLoginId, 'revoked', ip);
      return;
    }
    this.metrics.token('revoked', await this.accessTokens.revokeOne(tokenId, userId, this.clock.now(), ip ?? null));
    this.revocations.tokensRevoked([tokenId]);
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
    await this.accessTokens.lockFamily(manager, deviceLoginId);
    const ids = await this.accessTokens.revokeFamily(manager, deviceLoginId, this.clock.now(), ip ?? null, reason);
    this.revocations.tokensRevoked(ids);
    this.metrics.token('revoked', ids.length);
    return ids.length;
  }

  /**
   * "Sign out everywhere": every live token of this user, refresh tokens too, with one audit
   * event per long-lived token and per session; returns how many of those it ended. The
   * user's families are locked first, as revokeFamily does, so no rotation slips past.
   */
  async revokeAllForUser(userId: string, ip?: string | null): Promise<number> {
    const ended = await this.db.transaction(async (tx) => {
      await this.accessTokens.lockFamiliesOfUser(tx, userId);
      return this.accessTokens.revokeAllOfUser(tx, userId, this.clock.now(), ip ?? null);
    });
    this.revocations.userRevoked(userId);
    this.metrics.token('revoked', ended);
    return ended;
  }

  /** The caller's tokens, newest first, without secrets; a device session is one entry. */
  listForUser(userId: string): Promise<TokenListing[]> {
    return this.accessTokens.listForUser(userId);
  }
}
