/**
 * May this person approve a grant now: a device login, an app's consent, a token made in the
 * browser. One rule for every door where a person approves (the device page, the consent page and
 * the OAuth flow before it, the tokens page, the token API from a signed-in browser); each door
 * only words the step it gets back in its own way (a page, a redirect, an error).
 */

/** What the person's browser session shows when it would approve. */
export interface ApproverState {
  signedIn: boolean;
  /** REQUIRE_SECOND_FACTOR, and the session neither showed a second factor nor set one up. */
  mustEnrolSecondFactor: boolean;
  /** REQUIRE_EMAIL_VERIFICATION, and the address is not proven: nothing persistent is granted. */
  addressUnproven: boolean;
  /** Sudo mode lasts (auth/sudo-rule.ts inSudoMode). */
  inSudoMode: boolean;
}

/** What the person must do first, in the order it is asked. */
export type ApprovalStep = 'sign-in' | 'enrol-second-factor' | 'verify-email' | 'confirm';

/** Null when the person may approve now; else the first step before it. */
export function stepBeforeApproving(state: ApproverState): ApprovalStep | null {
  if (!state.signedIn) return 'sign-in';
  if (state.mustEnrolSecondFactor) return 'enrol-second-factor';
  if (state.addressUnproven) return 'verify-email';
  if (!state.inSudoMode) return 'confirm';
  return null;
}
