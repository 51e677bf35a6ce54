import { Injectable } from '@nestjs/common';
import type { Tx } from '../database/tx.js';

/** refresh-tokens/'s part of a revocation (it owns `refresh_tokens`), each in the revoker's `tx`. */
export interface RefreshTokenRevoker {
  /** Revokes the live refresh tokens of a family; how many. */
  revokeOfFamily(tx: Tx, grantId: string, now: Date): Promise<number>;
  /** Revokes every live refresh token of the person; the families they were of (one id per token). */
  revokeAllOfUser(tx: Tx, userId: string, now: Date): Promise<string[]>;
}

/** device-login/'s part of a "sign out everywhere" (it owns `device_logins`), in the revoker's `tx`. */
export interface UncollectedApprovals {
  /** Cancels every login the person approved that its terminal has not collected yet. */
  cancelApprovedBy(tx: Tx, userId: string): Promise<void>;
}

/**
 * Whoever must hear, in the revoking transaction, that grants (families) ended: webhooks/ writes a
 * back-channel logout token for each grant's client that asked for one (issue #46), so it goes if
 * and only if the revocation commits.
 */
export type GrantsEndedListener = (tx: Tx, grantIds: readonly string[], now: Date) => Promise<void>;

/**
 * The rows a family's revocation ends beyond access tokens, written by the modules that own them:
 * refresh-tokens/ and device-login/ sit above tokens/ (they use it), so they attach their part here
 * when they are made, as auth/ subscribes to TokenRevocations, and tokens/ imports neither. A
 * revocation without them attached would leave a session alive, so it refuses instead.
 */
@Injectable()
export class FamilyMembers {
  private refresh?: RefreshTokenRevoker;
  private approvals?: UncollectedApprovals;
  private readonly grantsEndedListeners: GrantsEndedListener[] = [];

  attachRefreshTokens(revoker: RefreshTokenRevoker): void {
    this.refresh = revoker;
  }

  attachUncollectedApprovals(approvals: UncollectedApprovals): void {
    this.approvals = approvals;
  }

  onGrantsEnded(listener: GrantsEndedListener): void {
    this.grantsEndedListeners.push(listener);
  }

  /** Tells every listener, in `tx`, that these grants ended. */
  async grantsEnded(tx: Tx, grantIds: readonly string[], now: Date): Promise<void> {
    if (!grantIds.length) return;
    for (const listener of this.grantsEndedListeners) await listener(tx, grantIds, now);
  }

  get refreshTokens(): RefreshTokenRevoker {
    if (!this.refresh) throw new Error('refresh-tokens/ has not attached its revoker (RefreshTokensModule not loaded): no family can be revoked');
    return this.refresh;
  }

  get uncollectedApprovals(): UncollectedApprovals {
    if (!this.approvals) throw new Error('device-login/ has not attached its approvals (DeviceLoginModule not loaded): a person cannot be signed out everywhere');
    return this.approvals;
  }
}
