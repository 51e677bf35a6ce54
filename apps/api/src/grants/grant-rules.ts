/**
 * The rules a grant (`grants`: the record of one approval, obtained by a device login or an
 * authorization code) answers to each time it would issue a token: at the redemption of its device code or
 * authorization code, and at every refresh. Each door reads the state under the grant's lock and
 * asks `refusalToIssue`; none relies on a revocation having run when the state changed.
 */

/** How an approval was proven, which its grant keeps: the account state, and the approving session's proof. */
export interface GrantProof {
  /** The account's credential epoch the approving session was signed in under. */
  credentialEpoch: number;
  /** The approving session's newest proof (RFC 8176). */
  amr: string[];
  /** The approving session had shown a second factor. */
  secondFactor: boolean;
  /** When the approving session last proved its person (its sign-in or a re-confirmation). */
  authTime?: Date;
  /** The approving browser session's key, as `web_sessions.sid` holds it. */
  webSession?: string;
}

/** What the next token of a grant depends on, read under the grant's lock. */
export interface GrantState {
  /** The grant was revoked (its tokens with it). */
  revoked: boolean;
  /** The account the grant acts for, as it is now; null if it is gone. */
  account: { disabled: boolean; credentialEpoch: number } | null;
  /** The account's credential epoch when the grant was approved; null: not known (refused). */
  approvedUnderEpoch: number | null;
  /** The client it was granted to is disabled. */
  clientDisabled: boolean;
  /** The approving session had shown a second factor. */
  secondFactor: boolean;
}

/** The deployment's policy a grant must still meet, whenever it was approved. */
export interface GrantPolicy {
  /** REQUIRE_SECOND_FACTOR. */
  requireSecondFactor: boolean;
}

/** Why a grant issues nothing more. */
export type IssueRefusal = 'grant_revoked' | 'account_disabled' | 'account_changed' | 'client_disabled' | 'second_factor_required';

/**
 * May this grant issue a token now? Null if so, else why not: the grant revoked, the account disabled or gone, its
 * password, address or enabled state changed since the approval (the credential epoch moved), the
 * client disabled, or REQUIRE_SECOND_FACTOR on and the approval made without a second factor
 * (the policy turned on after it: the person approves again, with one).
 */
export function refusalToIssue(state: GrantState, policy: GrantPolicy): IssueRefusal | null {
  if (state.revoked) return 'grant_revoked';
  if (!state.account || state.account.disabled) return 'account_disabled';
  if (state.approvedUnderEpoch === null || state.account.credentialEpoch !== state.approvedUnderEpoch) return 'account_changed';
  if (state.clientDisabled) return 'client_disabled';
  if (policy.requireSecondFactor && !state.secondFactor) return 'second_factor_required';
  return null;
}
