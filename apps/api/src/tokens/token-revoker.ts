import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import { notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { GrantsService } from '../grants/grants.service.js';
import { Metrics } from '../metrics/metrics.js';
import { AccessTokensRepository } from './access-tokens.repository.js';
import { AccessTokenTreesRepository } from './access-token-trees.repository.js';
import { FamilyMembers } from './family-members.js';
import { TokenRevocations } from './token-revocations.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { UsersService } from '../users/users.service.js';

/**
 * TokensService's revocations: one token, a family, or everything of a person, each in one
 * transaction under the locks of the trees it ends (AccessTokenTreesRepository), with its audit
 * events; after the commit it tells TokenRevocations (the verified-token caches) and the metrics.
 */
@Injectable()
export class TokenRevoker {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly accessTokens: AccessTokensRepository,
    private readonly trees: AccessTokenTreesRepository,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly revocations: TokenRevocations,
    private readonly metrics: Metrics,
    private readonly families: FamilyMembers,
    private readonly grants: GrantsService,
    private readonly users: UsersService,
  ) {}

  /**
   * Revokes one token of this user; revoking twice is harmless. A token of a grant
   * takes its whole family with it (every access and refresh token of that grant), so a
   * revoked session cannot come back through its refresh token.
   */
  async revokeForUser(userId: string, tokenId: string, ip?: string | null): Promise<void> {
    const token = await this.accessTokens.findOwned(tokenId, userId);
    if (!token) throw notFound('No such token.');
    if (token.grantId) {
      await this.revokeFamily(token.grantId, 'revoked', ip);
      return;
    }
    // Under its minting tree's lock, as a token being made with it takes it: what it made goes too.
    const ids = await this.uow.run(async (tx) => {
      await this.trees.lockTreeOf(tx, tokenId);
      return this.trees.revokeOne(tx, tokenId, userId, this.clock.now(), ip ?? null);
    });
    this.metrics.token('revoked', ids.length);
    this.revocations.tokensRevoked(ids);
  }

  /**
   * Revokes a grant: every access and refresh token descended from it, and every
   * token made with them (recursively, whoever they belong to), with its audit events, in one
   * transaction under the family's lock. For a logout, a revoked session on the tokens page, a
   * replayed device code, a reused refresh token and a disabled client. Returns how many access
   * tokens it revoked.
   */
  async revokeFamily(grantId: string, reason: string, ip?: string | null, tx?: Tx): Promise<number> {
    if (!tx) return this.uow.run((tx) => this.revokeFamily(grantId, reason, ip, tx));
    // The family's lock, as a rotation takes it (RefreshTokensService.refresh): a pair being
    // written now is committed before the statements below look, and so revoked with the rest.
    await this.trees.lockFamily(tx, grantId);
    const now = this.clock.now();
    // Access tokens (with the tokens made with them), then refresh tokens, then the family's
    // event: the order the one statement of before wrote them in, so no new lock order appears.
    const access = await this.trees.revokeFamilyAccess(tx, grantId, now, ip ?? null);
    const refreshTokens = await this.families.refreshTokens.revokeOfFamily(tx, grantId, now);
    await this.grants.revoke(tx, [grantId], now);
    if (!access) return 0; // no such family: nothing descends from it
    // Only a grant that was still live ends now (a second revocation tells nobody again).
    if (access.ids.length || refreshTokens) await this.families.grantsEnded(tx, [grantId], now);
    await this.audit.record(
      'token.revoke_family',
      {
        userId: access.decidedBy,
        ip: ip ?? null,
        detail: { deviceLoginId: grantId, reason, accessTokens: access.own, refreshTokens, ...(access.minted ? { mintedTokens: access.minted } : {}) },
        at: now,
      },
      tx,
    );
    this.revocations.tokensRevoked(access.ids);
    this.metrics.token('revoked', access.ids.length);
    return access.ids.length;
  }

  /**
   * Every grant of this person (device and code grants, each a family with the tokens made
   * with it), for a change of who controls the account (a new password or address): what was
   * approved under the old state ends at once, as the grant rules would refuse its next refresh
   * anyway (grants/grant-rules.ts). Tokens made directly on the tokens page are not grants and stay.
   * Each family in turn, in id order (the order every multi-family lock takes them); how many access tokens ended.
   */
  async revokeGrantsOfUser(userId: string, reason: string, ip?: string | null): Promise<number> {
    const grants = await this.uow.run((tx) => this.trees.liveGrantsOfUser(tx, userId, this.clock.now()));
    let ended = 0;
    for (const grant of grants) ended += await this.revokeFamily(grant, reason, ip);
    return ended;
  }

  /**
   * Every grant not revoked yet that a browser session signed in through one of these
   * identity-provider links approved (`grants.federated_link_id`), each a family with the tokens made
   * with it, in `tx`: what ends the link's sessions (its provider disabled or deleted, its domains
   * narrowed, the link refused or removed) ends what they approved, in the same transaction. An
   * approval the CLI has not collected yet ends too (its redemption finds the grant revoked). In id
   * order, as every multi-family revocation takes them; how many grants.
   */
  async revokeGrantsOfFederatedLinks(tx: Tx, linkIds: readonly string[], reason: string): Promise<number> {
    const grants = await this.grants.liveOfFederatedLinks(tx, linkIds);
    for (const grant of grants) await this.revokeFamily(grant, reason, null, tx);
    return grants.length;
  }

  /**
   * "Sign out everywhere": every live token of this user, refresh tokens too, and the tokens made
   * with them for other people (by an administrator), with one audit
   * event per long-lived token and per session; returns how many of those it ended. The
   * user's families are locked first, as revokeFamily does, so no rotation slips past.
   */
  async revokeAllForUser(userId: string, ip?: string | null): Promise<number> {
    const { ended, othersTokens } = await this.uow.run((tx) => this.revokeEverythingOfUserIn(tx, userId, this.clock.now(), ip ?? null));
    this.revocations.userRevoked(userId);
    this.revocations.tokensRevoked(othersTokens);
    this.metrics.token('revoked', ended + othersTokens.length);
    return ended;
  }

  /**
   * The live tokens a federation let through (workload identity federation), in the caller's
   * `tx`, which deletes the federation: one statement with a `token.revoke` event each. A token
   * being exchanged through it holds the federation's row (share-locked) until its commit, so the
   * deletion waits for it and this statement sees it. A service account's token makes no other
   * token, so there is no tree to follow. Telling the caches and the metrics is the caller's, after its commit.
   */
  revokeExchangedThroughIn(tx: Tx, federationId: string, now: Date, ip: string | null): Promise<string[]> {
    return this.trees.revokeExchangedThrough(tx, federationId, now, ip);
  }

  /**
   * What revokeAllForUser does, in the caller's `tx` (an administrator disabling the person), the
   * families locked first; telling the replicas and the metrics is the caller's, after its commit.
   * Uncollected approvals, access tokens, refresh tokens, the grants, then one
   * `token.revoke_family` event per session.
   */
  async revokeEverythingOfUserIn(tx: Tx, userId: string, now: Date, ip: string | null): Promise<{ ended: number; othersTokens: string[] }> {
    // The person's row first: an authorization code's exchange share-locks it while it records its
    // grant and first pair, so this waits for its commit and revokes that pair below; an exchange
    // after this finds the person's state as this leaves it. (Its callers that disable the person
    // hold the row already.)
    await this.users.lockAgainstSharers(tx, userId);
    // The uncollected approvals first, before any grant's lock (a redemption takes its login's,
    // then its grant's): a redemption under way holds its login, so this waits for its commit,
    // and the statements below see the pair it wrote and revoke it; one not begun finds its login
    // cancelled. Taken after the revocations, a pair committed between them and this was left live.
    await this.families.uncollectedApprovals.cancelApprovedBy(tx, userId);
    await this.trees.lockFamiliesOfUser(tx, userId, now);
    const access = await this.trees.revokeAllAccessOfUser(tx, userId, now, ip);
    const refreshed = await this.families.refreshTokens.revokeAllOfUser(tx, userId, now);
    await this.grants.revokeAllOfUser(tx, userId, now);
    const sessions = [...new Set([...access.sessions, ...refreshed])];
    await this.families.grantsEnded(tx, sessions, now);
    await this.audit.recordEach(
      'token.revoke_family',
      sessions.map((grantId) => ({ userId, ip, detail: { deviceLoginId: grantId, reason: 'signed out everywhere' }, at: now })),
      tx,
    );
    return { ended: access.ended + sessions.length, othersTokens: access.othersTokens };
  }
}
