import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { InjectDataSource } from '@nestjs/typeorm';
import { REFRESH_TOKEN_PREFIX, type User } from '@prospect/contract';
import type { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service.js';
import { BackgroundWrites } from '../common/background-writes.js';
import { Clock } from '../common/clock.js';
import { open, seal } from '../common/sealed.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { Sql } from '../database/sql.js';
import { TokensService } from './tokens.service.js';

/**
 * For this long after a refresh token is rotated, presenting it again answers the same successor
 * pair instead of counting as a reuse: two terminals (or a retried request whose answer was lost)
 * refreshing the same session at once both end logged in. After it, a presented rotated token
 * means someone else holds a copy, and the family is revoked.
 */
export const REFRESH_GRACE_SECONDS = 10;

/** Why a refresh token was refused; every one is `invalid_grant` on the wire. */
export type InvalidGrantReason = 'unknown' | 'expired' | 'revoked' | 'reused' | 'other_client' | 'just_rotated';

export class InvalidGrantError extends Error {
  constructor(readonly reason: InvalidGrantReason) {
    super(
      {
        unknown: 'This refresh token is not valid.',
        expired: 'This refresh token has expired.',
        revoked: 'This session has been revoked.',
        reused: 'This refresh token was already used, so the session has been revoked everywhere.',
        other_client: 'This refresh token was issued to another client.',
        just_rotated: 'This refresh token was used a moment ago: use the new one it was exchanged for.',
      }[reason],
    );
  }
}

/** An access token with the refresh token that renews it; the raw values exist only here and in one answer. */
export interface TokenPair {
  accessToken: string;
  accessTokenId: string;
  expiresAt: Date;
  refreshToken: string;
  /** The device login both descend from: their family. */
  familyId: string;
}

export interface RefreshedSession {
  pair: TokenPair;
  user: User;
  clientId: string;
  scope: string | null;
}

/** What a rotation seals under the old token for its grace: enough to answer the same again. */
interface SealedSuccessor {
  accessToken: string;
  accessTokenId: string;
  expiresAt: string;
  refreshToken: string;
}
const SUCCESSOR = 'refresh-successor';

interface ClaimedRow {
  id: string;
  device_login_id: string;
  user_id: string;
  family_expires_at: Date;
  client_id: string;
  scope: string | null;
  client_name: string | null;
  hostname: string | null;
  email: string;
  name: string;
}

/** How a session is named on the tokens page: "prospect CLI 0.1.0 on laptop". */
export const sessionLabel = (clientName: string | null, hostname: string | null): string | null =>
  [clientName, hostname].filter(Boolean).join(' on ') || null;

interface PresentedRow {
  id: string;
  device_login_id: string;
  user_id: string;
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
  successor_sealed: Buffer | null;
  client_id: string;
  scope: string | null;
  email: string;
  name: string;
}

/**
 * Rotating refresh tokens (OAuth 2.0 Security BCP §4.14): each is used once and answered with a
 * new pair; a rotated one presented again after the grace revokes its whole family.
 */
@Injectable()
export class RefreshTokensService {
  private readonly logger = new Logger(RefreshTokensService.name);

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly sql: Sql,
    private readonly tokens: TokensService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly background: BackgroundWrites,
  ) {}

  /** Sealed successors are erased once their grace ends (on every replica; the UPDATE is idempotent). */
  @Interval(REFRESH_GRACE_SECONDS * 1000)
  scheduledErase(): void {
    this.background.run('erase sealed refresh successors', () => this.eraseEndedGraces());
  }

  async eraseEndedGraces(): Promise<void> {
    await this.sql.rows(`UPDATE refresh_tokens SET successor_sealed = NULL WHERE successor_sealed IS NOT NULL AND rotated_at <= $1`, [
      new Date(this.clock.now().getTime() - REFRESH_GRACE_SECONDS * 1000),
    ]);
  }

  /** The first pair of a family, in the transaction that redeems its device login. */
  async issueFirstPair(
    tx: EntityManager,
    family: { deviceLoginId: string; userId: string; label: string | null; ip: string | null },
  ): Promise<TokenPair> {
    const familyExpiresAt = new Date(this.clock.now().getTime() + this.config.refreshTokenMaxLifetimeSeconds * 1000);
    return this.issuePair(tx, { ...family, familyExpiresAt });
  }

  private async issuePair(
    tx: EntityManager,
    family: { deviceLoginId: string; userId: string; label: string | null; ip: string | null; familyExpiresAt: Date },
  ): Promise<TokenPair> {
    const now = this.clock.now().getTime();
    const capSeconds = Math.floor((family.familyExpiresAt.getTime() - now) / 1000);
    const issued = await this.tokens.issue(
      {
        userId: family.userId,
        origin: 'device',
        label: family.label,
        ip: family.ip,
        deviceLoginId: family.deviceLoginId,
        // An access token never outlives its family.
        ttlSeconds: Math.max(1, Math.min(this.config.accessTokenTtlSeconds, capSeconds)),
      },
      tx,
    );
    const refreshToken = generateSecret(REFRESH_TOKEN_PREFIX);
    const expiresAt = new Date(Math.min(now + this.config.refreshTokenTtlSeconds * 1000, family.familyExpiresAt.getTime()));
    await tx.query(
      `INSERT INTO refresh_tokens (token_hash, device_login_id, user_id, created_at, expires_at, family_expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [sha256(refreshToken), family.deviceLoginId, family.userId, new Date(now), expiresAt, family.familyExpiresAt],
    );
    return { accessToken: issued.accessToken, accessTokenId: issued.id, expiresAt: issued.expiresAt, refreshToken, familyId: family.deviceLoginId };
  }

  /**
   * Exchanges a refresh token for a new pair. The family's device login row is locked first
   * (as TokensService.revokeFamily locks it), so a revocation never runs beside a rotation and
   * misses the pair it is writing; then one conditional UPDATE claims the token, so of two
   * racing refreshes one rotates and the other answers from the sealed successor. Throws
   * InvalidGrantError otherwise; a reuse revokes the family first.
   * @param clientId the client asking: a token is only refreshed by the client it was issued to.
   */
  async refresh(rawToken: string, clientId: string, ip: string | null): Promise<RefreshedSession> {
    if (!looksLikeSecret(rawToken, REFRESH_TOKEN_PREFIX)) throw new InvalidGrantError('unknown');
    const hash = sha256(rawToken);
    const now = this.clock.now();
    const rotated = await this.db.transaction(async (tx) => {
      const family = (await tx.query(
        `SELECT d.id FROM refresh_tokens r JOIN device_logins d ON d.id = r.device_login_id WHERE r.token_hash = $1 FOR UPDATE OF d`,
        [hash],
      )) as unknown[];
      if (!family.length) return null;
      // A statement of its own after the lock: it sees what a revocation that held it committed.
      const [claimedRows] = (await tx.query(
        `UPDATE refresh_tokens r SET rotated_at = $2
           FROM device_logins d, oauth_clients c, users u
          WHERE r.token_hash = $1 AND r.rotated_at IS NULL AND r.revoked_at IS NULL AND r.expires_at > $2
            AND d.id = r.device_login_id AND d.client_id = $3 AND c.id = d.client_id AND u.id = r.user_id
          RETURNING r.id, r.device_login_id, r.user_id, r.family_expires_at, d.client_id, d.scope,
                    COALESCE(d.client_name, c.name) AS client_name, d.hostname, u.email, u.name`,
        [hash, now, clientId],
      )) as [ClaimedRow[], number];
      const claimed = claimedRows[0];
      if (!claimed) return null;
      const pair = await this.issuePair(tx, {
        deviceLoginId: claimed.device_login_id,
        userId: claimed.user_id,
        label: sessionLabel(claimed.client_name, claimed.hostname),
        ip,
        familyExpiresAt: claimed.family_expires_at,
      });
      const successor: SealedSuccessor = { ...pair, expiresAt: pair.expiresAt.toISOString() };
      await tx.query(`UPDATE refresh_tokens SET successor_sealed = $2 WHERE id = $1`, [claimed.id, seal(rawToken, claimed.id, SUCCESSOR, successor)]);
      await this.audit.record(
        'token.refresh',
        { userId: claimed.user_id, ip, detail: { deviceLoginId: claimed.device_login_id, tokenId: pair.accessTokenId } },
        tx,
      );
      return { pair, user: { id: claimed.user_id, email: claimed.email, name: claimed.name }, clientId: claimed.client_id, scope: claimed.scope };
    });
    return rotated ?? this.presentedAgain(rawToken, hash, clientId, ip);
  }

  /** A refresh token that could not be claimed: unknown, over, another client's, or already rotated. */
  private async presentedAgain(rawToken: string, hash: Buffer, clientId: string, ip: string | null): Promise<RefreshedSession> {
    const [row] = await this.sql.rows<PresentedRow>(
      `SELECT r.id, r.device_login_id, r.user_id, r.expires_at, r.rotated_at, r.revoked_at, r.successor_sealed, d.client_id, d.scope, u.email, u.name
         FROM refresh_tokens r JOIN device_logins d ON d.id = r.device_login_id JOIN users u ON u.id = r.user_id
        WHERE r.token_hash = $1`,
      [hash],
    );
    const now = this.clock.now().getTime();
    if (!row) throw new InvalidGrantError('unknown');
    if (row.client_id !== clientId) throw new InvalidGrantError('other_client');
    if (row.revoked_at) throw new InvalidGrantError('revoked');
    if (!row.rotated_at) throw new InvalidGrantError('expired');
    const inGrace = now - row.rotated_at.getTime() < REFRESH_GRACE_SECONDS * 1000;
    if (inGrace) {
      const successor = row.successor_sealed ? open<SealedSuccessor>(rawToken, row.id, SUCCESSOR, row.successor_sealed) : null;
      // The same pair again only while it is still the family's newest: once it was itself
      // rotated, a second holder of this token is not a terminal that lost the race.
      if (successor && (await this.isUnused(successor.refreshToken))) {
        return {
          pair: { ...successor, expiresAt: new Date(successor.expiresAt), familyId: row.device_login_id },
          user: { id: row.user_id, email: row.email, name: row.name },
          clientId: row.client_id,
          scope: row.scope,
        };
      }
      // Sealed pair already erased (another replica's clock ahead): refuse, but a racing
      // terminal is no thief, so nothing is revoked.
      if (!successor) throw new InvalidGrantError('just_rotated');
    }
    // Rotated and presented again: a copy is in someone else's hands.
    await this.tokens.revokeFamily(row.device_login_id, 'refresh token reused', ip);
    await this.audit.record('token.reuse', { userId: row.user_id, ip, detail: { deviceLoginId: row.device_login_id } });
    this.logger.warn(`refresh token reused: revoked the family of device login ${row.device_login_id}`);
    throw new InvalidGrantError('reused');
  }

  private async isUnused(rawToken: string): Promise<boolean> {
    const [row] = await this.sql.rows<{ unused: boolean }>(`SELECT rotated_at IS NULL AND revoked_at IS NULL AS unused FROM refresh_tokens WHERE token_hash = $1`, [
      sha256(rawToken),
    ]);
    return row?.unused ?? false;
  }

  /**
   * The family of a refresh token, for revocation (RFC 7009) and introspection (RFC 7662); null
   * for an unknown one.
   */
  async describe(rawToken: string): Promise<RefreshTokenDescription | null> {
    if (!looksLikeSecret(rawToken, REFRESH_TOKEN_PREFIX)) return null;
    const [row] = await this.sql.rows<RefreshTokenDescription>(
      `SELECT r.device_login_id AS "familyId", r.user_id AS "userId", u.email, d.client_id AS "clientId", d.scope,
              r.created_at AS "createdAt", r.expires_at AS "expiresAt",
              (r.revoked_at IS NULL AND r.rotated_at IS NULL AND r.expires_at > $2) AS active
         FROM refresh_tokens r JOIN device_logins d ON d.id = r.device_login_id JOIN users u ON u.id = r.user_id
        WHERE r.token_hash = $1`,
      [sha256(rawToken), this.clock.now()],
    );
    return row ?? null;
  }
}

export interface RefreshTokenDescription {
  familyId: string;
  userId: string;
  email: string;
  clientId: string;
  scope: string | null;
  createdAt: Date;
  expiresAt: Date;
  active: boolean;
}
