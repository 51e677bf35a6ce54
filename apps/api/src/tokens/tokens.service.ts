import { Injectable } from '@nestjs/common';
import { ACCESS_TOKEN_PREFIX } from '@prospect/contract';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { open, seal } from '../common/sealed.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { refusalToIssue } from '../grants/grant-rules.js';
import { GrantsService } from '../grants/grants.service.js';
import { Metrics } from '../metrics/metrics.js';
import type { TokenOrigin } from './access-token.entity.js';
import { type AccessTokenDescription, AccessTokensRepository, type Minter, type MinterDescription, type TokenForVerification, type TokenListing } from './access-tokens.repository.js';
import { AccessTokenTreesRepository } from './access-token-trees.repository.js';
import { IdempotencyKeysRepository } from './idempotency-keys.repository.js';
import { TokenRevoker } from './token-revoker.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';

export type { AccessTokenDescription, Minter, MinterDescription, TokenListing } from './access-tokens.repository.js';

/** The token a new one was to be made with has been revoked or has expired meanwhile (a verification cached a moment ago). */
export class MinterEndedError extends Error {
  constructor() {
    super('the token it was made with has ended');
  }
}

/** Another request with the same Idempotency-Key (and credential) is being carried out right now. */
export class IdempotencyKeyInProgressError extends Error {
  constructor() {
    super('a request with this idempotency key is in progress');
  }
}

/** The Idempotency-Key was used before with another request body. */
export class IdempotencyKeyReusedError extends Error {
  constructor() {
    super('the idempotency key was used with another request');
  }
}

/**
 * How long a token made with an Idempotency-Key is answered again for the same key (the draft
 * leaves the window to the server, which must publish it: docs/operations.md).
 */
export const IDEMPOTENCY_WINDOW_HOURS = 24;

/** What a token's answer is kept sealed under, for an Idempotency-Key (common/sealed.ts). */
const IDEMPOTENT_REPLY = 'idempotent-reply';

/**
 * A request that may be sent again (draft-ietf-httpapi-idempotency-key-header): its key, together
 * with whoever sent it.
 */
export interface IdempotentRequest {
  /**
   * The operation, the caller's credential and its Idempotency-Key, in one string: the same string
   * is the same key from the same caller. Never stored: its SHA-256 finds the kept answer, and the
   * answer is sealed under it, so the database alone never reveals the token.
   */
  secret: string;
  /** The SHA-256 of the request's body: the same key with another body is refused. */
  requestHash: Buffer;
  /** The caller, whose account its kept answer goes with. */
  callerId: string;
}

/** The grant that made a token, in words: "the Prospect CLI session on laptop", "token “CI runner”". */
export function minterWords(minter: MinterDescription): string {
  if (minter.clientName !== undefined) return minter.hostname ? `the ${minter.clientName} session on ${minter.hostname}` : `a ${minter.clientName} session`;
  return minter.label ? `token “${minter.label}”` : 'an unnamed token';
}

const carriesAdmin = (scope: string | undefined) => scope !== undefined && scope.split(' ').includes('admin');

export interface IssueTokenInput {
  userId: string;
  origin: TokenOrigin;
  label?: string | null;
  /** Defaults to CLI_TOKEN_TTL_SECONDS; capped at ACCESS_TOKEN_MAX_TTL_SECONDS. */
  ttlSeconds?: number;
  ip?: string | null;
  /** The caller's User-Agent, for the event (issue #46). */
  userAgent?: string | null;
  grantId?: string | null;
  /** An admin issuing for someone else: recorded in the audit event. */
  issuedBy?: string;
  /**
   * What it is granted, space-separated (SCOPES). Unset: nothing stored, so it has what a token
   * made before scopes were stored on tokens has (its device login's, or the CLI's).
   */
  scope?: string;
  /** It must expire by then at the latest (the end of a grant's `admin`). */
  endsBy?: Date | null;
  /** A service account's token exchanged through this federation (RFC 8693): it ends when the federation does (revokeExchangedThroughIn). */
  federationId?: string | null;
  /**
   * The bearer token it is made with. The new token lives at most as long as that one could (a
   * device login's token: its family's absolute end, and the end of its grant's `admin` if the new
   * one carries `admin`), and is revoked with it.
   * @throws MinterEndedError when it is no longer live.
   */
  minter?: { tokenId: string; grantId: string | null };
}

export interface IssuedToken {
  /** The only copy of the secret: returned once, never stored. */
  accessToken: string;
  id: string;
  expiresAt: Date;
}

/**
 * The module's front door: issuing tokens (once, or once per Idempotency-Key) and what other modules
 * read of them; revocations are TokenRevoker's, through the methods of the same names here.
 */
@Injectable()
export class TokensService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly accessTokens: AccessTokensRepository,
    private readonly trees: AccessTokenTreesRepository,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly metrics: Metrics,
    private readonly idempotencyKeys: IdempotencyKeysRepository,
    private readonly revoker: TokenRevoker,
    private readonly grants: GrantsService,
  ) {}

  /** Issues a token and records it, in `tx` or in one of its own. */
  issue(input: IssueTokenInput, tx?: Tx): Promise<IssuedToken> {
    return tx ? this.issueIn(tx, input) : this.uow.run((tx) => this.issueIn(tx, input));
  }

  /**
   * Issues a token once per Idempotency-Key: the first request with the key issues it and keeps its
   * answer (`answer(issued)`), sealed, in the same transaction (both or neither); the same key sent
   * again within IDEMPOTENCY_WINDOW_HOURS gets that answer again, verbatim, and issues nothing (a
   * token revoked meanwhile is answered as it was made: revoked, it lets nobody in). A request that
   * finds no answer kept takes the key's lock (held to its commit) and looks again before it
   * issues, so of requests sent at once with one key exactly one issues; the others are told it is
   * in progress (never made to wait: the draft's answer, and no connection held for a waiter).
   * @throws IdempotencyKeyInProgressError while another request holds the key.
   * @throws IdempotencyKeyReusedError when the key was used with another body.
   * @throws MinterEndedError as `issue` does.
   */
  issueIdempotently<R>(request: IdempotentRequest, input: IssueTokenInput, answer: (issued: IssuedToken) => R): Promise<R> {
    const lookupHash = sha256(request.secret);
    const context = lookupHash.toString('base64url');
    const now = this.clock.now();
    const windowStart = new Date(now.getTime() - IDEMPOTENCY_WINDOW_HOURS * 3600 * 1000);
    const keptReply = async (tx: Tx): Promise<R | null> => {
      const kept = await this.idempotencyKeys.findSince(tx, lookupHash, windowStart);
      if (!kept) return null;
      if (!kept.requestHash.equals(request.requestHash)) throw new IdempotencyKeyReusedError();
      // Found by the secret's hash, it opens with the secret; were it ever not to, it is no answer.
      return open<R>(request.secret, context, IDEMPOTENT_REPLY, kept.replySealed);
    };
    return this.uow.run(async (tx) => {
      // An answer already kept needs no lock: requests sent again after it are answered side by side.
      const before = await keptReply(tx);
      if (before !== null) return before;
      if (!(await this.idempotencyKeys.tryLock(tx, lookupHash))) throw new IdempotencyKeyInProgressError();
      // Kept by the request that held the lock until a moment ago?
      const meanwhile = await keptReply(tx);
      if (meanwhile !== null) return meanwhile;
      const reply = answer(await this.issueIn(tx, input));
      const replySealed = seal(request.secret, context, IDEMPOTENT_REPLY, reply);
      await this.idempotencyKeys.save(tx, { lookupHash, userId: request.callerId, requestHash: request.requestHash, replySealed, createdAt: now });
      return reply;
    });
  }

  private async issueIn(tx: Tx, input: IssueTokenInput): Promise<IssuedToken> {
    const ttl = Math.min(input.ttlSeconds ?? this.config.cliTokenTtlSeconds, this.config.accessTokenMaxTtlSeconds);
    const now = this.clock.now();
    const ends = [now.getTime() + ttl * 1000];
    if (input.endsBy) ends.push(input.endsBy.getTime());
    // Wherever it is made (a grant, the tokens page, a web session, a bearer token), a token that
    // carries `admin` ends within ADMIN_GRANT_SECONDS: holding `admin` means it is fresh.
    if (carriesAdmin(input.scope)) ends.push(now.getTime() + this.config.adminGrantSeconds * 1000);
    if (input.minter) ends.push(await this.minterEnd(tx, input.minter.tokenId, input.scope, now));
    const accessToken = generateSecret(ACCESS_TOKEN_PREFIX);
    const expiresAt = new Date(Math.min(...ends));
    const { minter } = input;
    const id = await this.accessTokens.insert(tx, {
      tokenHash: sha256(accessToken),
      userId: input.userId,
      origin: input.origin,
      label: input.label ?? null,
      scope: input.scope ?? null,
      grantId: input.grantId ?? null,
      // A device login's token is one of many (one an hour): the session, its family, made it.
      mintedByTokenId: minter && !minter.grantId ? minter.tokenId : null,
      mintedByGrantId: minter?.grantId ?? null,
      mintedByFederationId: input.federationId ?? null,
      createdIp: input.ip ?? null,
      createdAt: now,
      expiresAt,
    });
    const detail = {
      tokenId: id,
      origin: input.origin,
      ...(input.issuedBy ? { issuedBy: input.issuedBy } : {}),
      // The grant that did it: the token presented, and its session for a device login's token.
      ...(minter ? { mintedByTokenId: minter.tokenId, ...(minter.grantId ? { mintedByDeviceLoginId: minter.grantId } : {}) } : {}),
    };
    await this.audit.record('token.issue', { userId: input.userId, ip: input.ip, userAgent: input.userAgent, detail }, tx);
    this.metrics.token('issued');
    return { accessToken, id, expiresAt };
  }

  /**
   * The latest a token made with `minterId` may live, read under the minting tree's lock (so a
   * revocation of the minter cannot miss it): the minter's own end, or for a device login's token
   * its family's absolute end while a refresh token keeps the family alive (the session outlives
   * its hourly access tokens); no later than the grant's `admin` when the new token carries `admin`.
   * A tree whose root is a grant asks the grant's rules (refusalToIssue), as a refresh does: a
   * grant that may issue nothing more (a policy it no longer meets, a client or account changed
   * without the revocation having run) makes nothing through its access tokens either.
   * @throws MinterEndedError
   */
  private async minterEnd(tx: Tx, minterId: string, scope: string | undefined, now: Date): Promise<number> {
    const tree = await this.trees.lockTreeOf(tx, minterId);
    if (tree?.grantId) {
      // Already held (the tree's lock is its grant's row): this reads the grant's state under it.
      const grant = await this.grants.lockForIssue(tx, tree.grantId);
      if (!grant || refusalToIssue(grant, this.config)) throw new MinterEndedError();
    }
    const minter = await this.trees.minterState(tx, minterId, now);
    if (!minter?.live) throw new MinterEndedError();
    let end = Math.max(minter.expiresAt.getTime(), minter.familyExpiresAt?.getTime() ?? 0);
    if (minter.adminUntil && scope?.split(' ').includes('admin')) end = Math.min(end, minter.adminUntil.getTime());
    return end;
  }

  /** The grant that made a token (a token or a session), in words; null when it is gone. */
  async describeMinter(minter: Minter): Promise<string | null> {
    const described = await this.accessTokens.describeMinter(minter);
    return described ? minterWords(described) : null;
  }

  /** What is known of an access token, active or not; null for one that does not exist. */
  async describe(rawToken: string): Promise<AccessTokenDescription | null> {
    if (!looksLikeSecret(rawToken, ACCESS_TOKEN_PREFIX)) return null;
    return (await this.accessTokens.describe(sha256(rawToken), this.clock.now())) ?? null;
  }

  /** Revokes one token of this user, a device login's with its whole family (TokenRevoker). */
  revokeForUser(userId: string, tokenId: string, ip?: string | null): Promise<void> {
    return this.revoker.revokeForUser(userId, tokenId, ip);
  }

  /** Revokes a family, in `tx` or in one of its own; how many access tokens (TokenRevoker). */
  revokeFamily(grantId: string, reason: string, ip?: string | null, tx?: Tx): Promise<number> {
    return this.revoker.revokeFamily(grantId, reason, ip, tx);
  }

  /** Every grant of the person (device and code grants), not the tokens made on the tokens page (TokenRevoker). */
  revokeGrantsOfUser(userId: string, reason: string, ip?: string | null): Promise<number> {
    return this.revoker.revokeGrantsOfUser(userId, reason, ip);
  }

  /** The grants approved from sessions signed in through these identity-provider links, in `tx`; how many (TokenRevoker). */
  revokeGrantsOfFederatedLinks(tx: Tx, linkIds: readonly string[], reason: string): Promise<number> {
    return this.revoker.revokeGrantsOfFederatedLinks(tx, linkIds, reason);
  }

  /** "Sign out everywhere"; how many long-lived tokens and sessions it ended (TokenRevoker). */
  revokeAllForUser(userId: string, ip?: string | null): Promise<number> {
    return this.revoker.revokeAllForUser(userId, ip);
  }

  /** What revokeAllForUser does, in the caller's `tx`; telling the caches is the caller's (TokenRevoker). */
  revokeEverythingOfUserIn(tx: Tx, userId: string, now: Date, ip: string | null): Promise<{ ended: number; othersTokens: string[] }> {
    return this.revoker.revokeEverythingOfUserIn(tx, userId, now, ip);
  }

  /** Revokes the live tokens exchanged through a federation, in the caller's `tx`; their ids, for the caller to tell the caches after its commit (TokenRevoker). */
  revokeExchangedThroughIn(tx: Tx, federationId: string, now: Date, ip: string | null): Promise<string[]> {
    return this.revoker.revokeExchangedThroughIn(tx, federationId, now, ip);
  }

  /** The caller's tokens, newest first, without secrets; a device session is one entry. */
  listForUser(userId: string): Promise<TokenListing[]> {
    return this.accessTokens.listForUser(userId);
  }

  /** A bearer token by its hash, with its user, as verification reads it (the hot path: one prepared statement). */
  findForVerification(hash: Buffer): Promise<TokenForVerification | undefined> {
    return this.accessTokens.findForVerification(hash);
  }

  /** A token was used at `now`: its `last_used_at`, unless it was recorded after `staleBefore` already. */
  recordUse(tokenId: string, now: Date, staleBefore: Date): Promise<void> {
    return this.accessTokens.recordUse(tokenId, now, staleBefore);
  }

  /** At most `limit` tokens expired or revoked before `before`, in `tx` (retention); how many. */
  purgeEndedBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.accessTokens.deleteEndedBefore(tx, before, limit);
  }

  /** At most `limit` answers kept for an Idempotency-Key made before `before`, in `tx` (retention); how many. */
  purgeIdempotentRepliesBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.idempotencyKeys.deleteCreatedBefore(tx, before, limit);
  }
}
