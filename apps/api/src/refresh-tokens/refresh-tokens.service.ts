import { Injectable, Logger } from '@nestjs/common';
import { REFRESH_TOKEN_PREFIX, type User } from '@prospect/contract';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { open, seal } from '../common/sealed.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { Metrics } from '../metrics/metrics.js';
import { scopeOfGrantAt } from '../tokens/granted-scope.js';
import { FamilyMembers } from '../tokens/family-members.js';
import { type IssueRefusal, refusalToIssue } from '../grants/grant-rules.js';
import { GrantsService } from '../grants/grants.service.js';
import { TokensService } from '../tokens/tokens.service.js';
import { type FamilyRow, type PresentedRow, type RefreshTokenDescription, RefreshTokensRepository } from './refresh-tokens.repository.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';

export type { RefreshTokenDescription } from './refresh-tokens.repository.js';

/** Why a refresh token was refused; every one is `invalid_grant` on the wire. */
export type InvalidGrantReason = 'unknown' | 'expired' | 'revoked' | 'reused' | 'other_client' | 'grant_ended';

export class InvalidGrantError extends Error {
  constructor(readonly reason: InvalidGrantReason) {
    super(
      {
        unknown: 'This refresh token is not valid.',
        expired: 'This refresh token has expired.',
        revoked: 'This session has been revoked.',
        reused: 'This refresh token was already used, so the session has been revoked everywhere.',
        other_client: 'This refresh token was issued to another client.',
        grant_ended: 'This session has ended: the account, the app or the server’s policy changed since it was approved. Sign in again.',
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
  /** The grant both descend from: their family. */
  familyId: string;
  /** What the access token carries: the grant's scope, `admin` only while the grant's lasts. */
  scope: string;
}

export interface RefreshedSession {
  pair: TokenPair;
  user: User;
  clientId: string;
  /** The new access token's. */
  scope: string;
}

/** What a rotation seals under the old token: enough to answer the same again. */
interface SealedSuccessor {
  accessToken: string;
  accessTokenId: string;
  expiresAt: string;
  refreshToken: string;
}
const SUCCESSOR = 'refresh-successor';

/** What a new pair of a family is issued from. */
interface Family {
  grantId: string;
  userId: string;
  label: string | null;
  ip: string | null;
  familyExpiresAt: Date;
  /** What its grant was approved for (space-separated). */
  scope: string;
  /** When that grant's `admin` ends; null if it has none. */
  adminUntil: Date | null;
}

/** A refresh decided inside its transaction; a refusal is thrown only after the commit, so a reuse's revocation stays. */
type RefreshOutcome = { session: RefreshedSession } | { refused: InvalidGrantReason; familyId?: string };

/** How a session is named on the tokens page: "prospect CLI 0.1.0 on laptop". */
export const sessionLabel = (clientName: string | null, hostname: string | null): string | null =>
  [clientName, hostname].filter(Boolean).join(' on ') || null;

const familyOf = (row: FamilyRow, ip: string | null): Family => ({
  grantId: row.grant_id,
  userId: row.user_id,
  label: sessionLabel(row.client_name, row.hostname),
  ip,
  familyExpiresAt: row.family_expires_at,
  scope: row.scope,
  adminUntil: row.admin_until,
});

const sessionOf = (row: FamilyRow, pair: TokenPair): RefreshedSession => ({
  pair,
  user: { id: row.user_id, email: row.email, name: row.name },
  clientId: row.client_id,
  scope: pair.scope,
});

/**
 * Rotating refresh tokens (OAuth 2.0 Security BCP §4.14): each is used once and answered with a
 * new pair. A family is one chain (each token has at most one successor). Presenting a rotated
 * token again within REFRESH_REPLAY_SECONDS answers its successor pair again while that successor
 * was never used, since the answer was lost, not stolen; once the successor was used, or after the
 * window, it is a reuse and revokes the family.
 */
@Injectable()
export class RefreshTokensService {
  private readonly logger = new Logger(RefreshTokensService.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly tokens: TokensService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly metrics: Metrics,
    private readonly grants: GrantsService,
    families: FamilyMembers,
  ) {
    // A family's revocation (TokensService, below this module) ends its refresh tokens through us.
    families.attachRefreshTokens({
      revokeOfFamily: (tx, grantId, now) => this.refreshTokens.revokeOfFamily(tx, grantId, now),
      revokeAllOfUser: (tx, userId, now) => this.refreshTokens.revokeAllOfUser(tx, userId, now),
    });
  }

  /** The first pair of a family, in the transaction that redeems its device login or its code. */
  async issueFirstPair(tx: Tx, family: Omit<Family, 'familyExpiresAt'>): Promise<TokenPair> {
    const familyExpiresAt = new Date(this.clock.now().getTime() + this.config.refreshTokenMaxLifetimeSeconds * 1000);
    return this.issuePair(tx, { ...family, familyExpiresAt }, null);
  }

  private async issuePair(tx: Tx, family: Family, parentId: string | null): Promise<TokenPair> {
    const now = this.clock.now().getTime();
    const issued = await this.issueAccessToken(tx, family);
    const refreshToken = generateSecret(REFRESH_TOKEN_PREFIX);
    const expiresAt = new Date(Math.min(now + this.config.refreshTokenTtlSeconds * 1000, family.familyExpiresAt.getTime()));
    await this.refreshTokens.insert(tx, {
      tokenHash: sha256(refreshToken),
      grantId: family.grantId,
      userId: family.userId,
      createdAt: new Date(now),
      expiresAt,
      familyExpiresAt: family.familyExpiresAt,
      parentId,
    });
    return {
      accessToken: issued.accessToken,
      accessTokenId: issued.id,
      expiresAt: issued.expiresAt,
      refreshToken,
      familyId: family.grantId,
      scope: issued.scope,
    };
  }

  /**
   * An access token of the family: the grant's scope, with `admin` (and then expiring by the end
   * of the grant's `admin`) only while that lasts; a refresh after it keeps the rest.
   */
  private async issueAccessToken(tx: Tx, family: Family) {
    const now = this.clock.now();
    const capSeconds = Math.floor((family.familyExpiresAt.getTime() - now.getTime()) / 1000);
    const { scope, endsBy } = scopeOfGrantAt(family.scope, family.adminUntil, now);
    const issued = await this.tokens.issue(
      {
        userId: family.userId,
        origin: 'device',
        label: family.label,
        ip: family.ip,
        grantId: family.grantId,
        // An access token never outlives its family.
        ttlSeconds: Math.max(1, Math.min(this.config.accessTokenTtlSeconds, capSeconds)),
        scope,
        endsBy,
      },
      tx,
    );
    return { ...issued, scope };
  }

  /**
   * Exchanges a refresh token for a new pair, or answers the pair it was already exchanged for.
   * Everything happens in one transaction that first locks the family's grant row (as
   * TokensService.revokeFamily does): rotations, second presentations and revocations of one
   * family run one at a time, so a revocation never misses a pair being written and a second
   * presentation reads a successor that cannot be used under it. Then one conditional UPDATE
   * claims the token. Throws InvalidGrantError otherwise; a reuse revokes the family first.
   * @param clientId the client asking: a token is only refreshed by the client it was issued to.
   */
  async refresh(rawToken: string, clientId: string, ip: string | null): Promise<RefreshedSession> {
    if (!looksLikeSecret(rawToken, REFRESH_TOKEN_PREFIX)) throw new InvalidGrantError('unknown');
    const hash = sha256(rawToken);
    const outcome = await this.uow.run(async (tx): Promise<RefreshOutcome> => {
      // The family's lock: its grant's row, found by the token and read with what its next token depends on, in one statement.
      const grant = await this.grants.lockForIssueOfRefreshToken(tx, hash);
      if (!grant) return { refused: 'unknown' };
      // The grant's own rules first, whatever revocation ran or did not: an account disabled or
      // changed, a client disabled or a policy the approval no longer meets ends the family here and now.
      const refusal = refusalToIssue(grant, this.config);
      // A revoked grant revoked its refresh tokens with it: such a token is answered as any revoked
      // one is; a token of it that is still live (issued past a revocation) is ended below with the rest.
      if (refusal === 'grant_revoked' && (await this.refreshTokens.findPresented(tx, hash))?.revoked_at) return this.presentedAgain(tx, rawToken, hash, clientId, ip);
      if (refusal) return this.endedGrant(tx, hash, refusal, ip);
      // A statement of its own after the lock: it sees what a revocation or rotation that held it committed.
      const claimed = await this.refreshTokens.claim(tx, hash, this.clock.now(), clientId);
      return claimed ? { session: await this.rotate(tx, claimed, rawToken, ip) } : this.presentedAgain(tx, rawToken, hash, clientId, ip);
    });
    if ('session' in outcome) {
      this.metrics.token('refreshed');
      return outcome.session;
    }
    if (outcome.refused === 'reused') this.metrics.token('reuse_detected');
    if (outcome.refused === 'reused') this.logger.warn(`refresh token reused: revoked the family of grant ${outcome.familyId}`);
    throw new InvalidGrantError(outcome.refused);
  }

  /** A grant that may issue nothing more: its family revoked in this transaction, so its access tokens end too. */
  private async endedGrant(tx: Tx, hash: Buffer, refusal: IssueRefusal, ip: string | null): Promise<RefreshOutcome> {
    const row = await this.refreshTokens.findPresented(tx, hash);
    if (row) await this.tokens.revokeFamily(row.grant_id, `grant ended: ${refusal.replaceAll('_', ' ')}`, ip, tx);
    return { refused: 'grant_ended', familyId: row?.grant_id };
  }

  private async rotate(tx: Tx, claimed: FamilyRow, rawToken: string, ip: string | null): Promise<RefreshedSession> {
    // This token is used now: the copy of it sealed under its predecessor can answer nobody
    // any more (the predecessor again is a reuse), so it goes in this transaction.
    if (claimed.parent_id) await this.refreshTokens.setSealedSuccessor(tx, claimed.parent_id, null);
    const pair = await this.issuePair(tx, familyOf(claimed, ip), claimed.id);
    await this.refreshTokens.setSealedSuccessor(tx, claimed.id, this.sealSuccessor(rawToken, claimed.id, pair));
    await this.audit.record('token.refresh', { userId: claimed.user_id, ip, detail: { deviceLoginId: claimed.grant_id, tokenId: pair.accessTokenId } }, tx);
    return sessionOf(claimed, pair);
  }

  /** Sealed under the old token itself, which the server does not store: only its holder opens it. */
  private sealSuccessor(rawToken: string, tokenId: string, pair: TokenPair): Buffer {
    const successor: SealedSuccessor = {
      accessToken: pair.accessToken,
      accessTokenId: pair.accessTokenId,
      expiresAt: pair.expiresAt.toISOString(),
      refreshToken: pair.refreshToken,
    };
    return seal(rawToken, tokenId, SUCCESSOR, successor);
  }

  /** A refresh token that could not be claimed, under its family's lock: unknown, over, another client's, or already rotated. */
  private async presentedAgain(tx: Tx, rawToken: string, hash: Buffer, clientId: string, ip: string | null): Promise<RefreshOutcome> {
    const row = await this.refreshTokens.findPresented(tx, hash);
    const now = this.clock.now().getTime();
    if (!row) return { refused: 'unknown' };
    if (row.client_id !== clientId) return { refused: 'other_client' };
    if (row.revoked_at) return { refused: 'revoked' };
    if (!row.rotated_at) return { refused: 'expired' }; // unclaimed and never rotated: its lifetime is over
    // Within REFRESH_REPLAY_SECONDS of the rotation, its successor never presented: the answer of
    // that rotation was lost (a dropped connection, a killed process) or a racing terminal asked
    // first, and the same successor pair is answered again. After that window, or once the
    // successor was used, this is an older generation than the family's newest: a copy is in
    // someone else's hands. Without the bound, a thief presenting the token in step with its owner
    // would be answered beside the owner for the family's whole life.
    const replayEnds = row.rotated_at.getTime() + this.replaySeconds() * 1000;
    if (!row.successor_id || row.successor_rotated_at || now >= replayEnds) {
      await this.tokens.revokeFamily(row.grant_id, 'refresh token reused', ip, tx);
      await this.audit.record('token.reuse', { userId: row.user_id, ip, detail: { deviceLoginId: row.grant_id } }, tx);
      return { refused: 'reused', familyId: row.grant_id };
    }
    const successor = row.successor_sealed && open<SealedSuccessor>(rawToken, row.id, SUCCESSOR, row.successor_sealed);
    // The window is at most the access token's lifetime (replaySeconds), so the pair is live unless the family ended.
    if (!successor || row.expires_at.getTime() <= now || row.successor_expires_at!.getTime() <= now || new Date(successor.expiresAt).getTime() <= now) return { refused: 'expired' };
    // The sealed token carries `admin` only if the grant's still lasts, since it expires by then.
    const scope = scopeOfGrantAt(row.scope, row.admin_until, new Date(now)).scope;
    const pair: TokenPair = { ...successor, expiresAt: new Date(successor.expiresAt), familyId: row.grant_id, scope };
    return { session: sessionOf(row, pair) };
  }

  /**
   * The family of a refresh token, for revocation (RFC 7009) and introspection (RFC 7662); null
   * for an unknown one.
   */
  async describe(rawToken: string): Promise<RefreshTokenDescription | null> {
    if (!looksLikeSecret(rawToken, REFRESH_TOKEN_PREFIX)) return null;
    return (await this.refreshTokens.describe(sha256(rawToken), this.clock.now())) ?? null;
  }

  /** At most `limit` refresh tokens expired or revoked before `before`, in `tx` (retention); how many. */
  purgeEndedBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.refreshTokens.deleteEndedBefore(tx, before, limit);
  }

  /** Forgets the successor pairs sealed under tokens rotated longer than REFRESH_REPLAY_SECONDS ago: nobody may have them again (idempotent). */
  eraseSealedSuccessorsPastReplay(now: Date): Promise<void> {
    return this.refreshTokens.eraseSealedSuccessorsRotatedBefore(new Date(now.getTime() - this.replaySeconds() * 1000));
  }

  /** REFRESH_REPLAY_SECONDS, never longer than an access token lives: a pair answered again is always live. */
  private replaySeconds(): number {
    return Math.min(this.config.refreshReplaySeconds, this.config.accessTokenTtlSeconds);
  }
}
