import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/tx.js';
import type { GrantState } from './grant-rules.js';
import { GrantsRepository, type NewGrant } from './grants.repository.js';

export type { NewGrant } from './grants.repository.js';

/** The browser session that approved was ended (signed out, its provider no longer vouching) before its grant was recorded. */
export class ApprovingSessionEndedError extends Error {
  constructor() {
    super('the approving session has ended');
  }
}

/**
 * Grants (`grants`, this module's alone): made by the doors that obtain one (a device login's
 * approval, an authorization code's exchange), locked by whoever issues or revokes a token of one
 * (refresh-tokens/, tokens/, device-login/), each through these methods rather than SQL on the table.
 */
@Injectable()
export class GrantsService {
  constructor(private readonly grants: GrantsRepository) {}

  /**
   * Records an approval, in `tx`; its id. Throws ApprovingSessionEndedError when the approving
   * browser session was ended meanwhile (GrantsRepository.insert): the caller's transaction rolls
   * back, and nothing of the approval stays.
   */
  async create(tx: Tx, grant: NewGrant): Promise<string> {
    const id = await this.grants.insert(tx, grant);
    if (id === undefined) throw new ApprovingSessionEndedError();
    return id;
  }

  /**
   * The family's lock: the grant's row, held for the rest of `tx`, with what its next token
   * depends on (ask grant-rules.ts refusalToIssue). A rotation, a redemption, a token made with one
   * of its tokens and every revocation take it first, so a token being written is committed before
   * a revocation looks. Undefined for no such grant.
   */
  lockForIssue(tx: Tx, grantId: string): Promise<GrantState | undefined> {
    return this.grants.lockForIssue(tx, grantId);
  }

  /** lockForIssue for the grant of a refresh token (by its hash), found and locked in one statement; undefined for no such token. */
  lockForIssueOfRefreshToken(tx: Tx, tokenHash: Buffer): Promise<GrantState | undefined> {
    return this.grants.lockForIssueOfRefreshToken(tx, tokenHash);
  }

  /** Locks several grants in a fixed order (by id), for a revocation that ends them all. */
  lockAll(tx: Tx, grantIds: readonly string[]): Promise<void> {
    return this.grants.lockAll(tx, grantIds);
  }

  /** Marks grants revoked, in `tx` (their tokens are revoked by the caller in the same transaction). */
  revoke(tx: Tx, grantIds: readonly string[], now: Date): Promise<void> {
    return this.grants.revoke(tx, grantIds, now);
  }

  /** Marks every grant of the person revoked, in `tx`. */
  revokeAllOfUser(tx: Tx, userId: string, now: Date): Promise<void> {
    return this.grants.revokeAllOfUser(tx, userId, now);
  }

  /** The grants not revoked yet that were approved from sessions signed in through these identity-provider links. */
  liveOfFederatedLinks(tx: Tx, linkIds: readonly string[]): Promise<string[]> {
    return this.grants.liveOfFederatedLinks(tx, linkIds);
  }

  /** The grants the person gave a client by an authorization code. */
  codeGrantsOf(tx: Tx, userId: string, clientId: string): Promise<string[]> {
    return this.grants.codeGrantsOf(tx, userId, clientId);
  }

  /** The grants of a client with a live token (or a live token made with one of theirs): what its disable revokes. */
  withLiveTokensOfClient(tx: Tx, clientId: string): Promise<string[]> {
    return this.grants.withLiveTokensOfClient(tx, clientId);
  }

  /** Deletes every grant of a client being deleted, in `tx`; how many. */
  deleteAllOfClient(tx: Tx, clientId: string): Promise<number> {
    return this.grants.deleteAllOfClient(tx, clientId);
  }

  /** At most `limit` grants nothing hangs off any more, created before `before` (retention); how many. */
  purgeUnusedBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.grants.deleteUnusedBefore(tx, before, limit);
  }
}
