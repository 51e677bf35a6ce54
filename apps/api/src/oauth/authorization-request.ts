import type { Scope } from '@prospect/contract';
import type { OAuthClient } from './oauth-client.entity.js';

export type Prompt = 'none' | 'login' | 'consent' | 'select_account';

/** An authorization request that passed every check: what the consent page shows and the code is bound to. */
export interface AuthorizationRequest {
  client: OAuthClient;
  /** Exactly as the client sent it (a loopback one with its port). */
  redirectUri: string;
  state?: string;
  /** What it asked for (or, asking for nothing, all its client may have but `admin`), in the registry's order. */
  scopes: Scope[];
  nonce?: string;
  codeChallenge: string;
  prompts: Prompt[];
  /** OpenID Connect `max_age`, seconds. */
  maxAge?: number;
  loginHint?: string;
}

/** What the checks of a request found. */
export type CheckedAuthorization =
  /** The client or its redirect URI is not what it must be: shown as a page, never redirected to (RFC 6749 §4.1.2.1). */
  | { kind: 'refused'; status: number; title: string; message: string }
  /** Any other error: answered to the redirect URI. */
  | { kind: 'error'; location: string }
  | { kind: 'valid'; request: AuthorizationRequest };

/** The browser a request came in: who is signed in there and what they proved, for the rules of the door. */
export interface BrowserState {
  /** The signed-in person, and the key of this browser session (as `web_sessions.sid` holds it), which a code is bound to. */
  user?: { id: string; email: string; name: string; emailVerified: boolean; credentialEpoch: number; session: string };
  /** REQUIRE_SECOND_FACTOR: signed in without one, which must be set up first. */
  mustEnrolSecondFactor: boolean;
  /** REQUIRE_EMAIL_VERIFICATION and an address not proven: nothing persistent is granted. */
  emailBlocked: boolean;
  /** The session's last proof of who it is (sign-in or sudo re-confirmation), ms. */
  provenAt: number;
  /** Sudo mode lasts: an approval may be given. */
  inSudoMode: boolean;
}

/** What to do with a valid request in this browser. */
export type AuthorizationStep =
  | { kind: 'sign-in' }
  | { kind: 'enrol-second-factor' }
  | { kind: 'verify-email' }
  /** Prove who they are again (prompt=login, max_age, or sudo mode to approve), then come back. */
  | { kind: 'confirm' }
  | { kind: 'consent'; otherAccountHinted: boolean }
  | { kind: 'issue' }
  | { kind: 'error'; location: string };

/** What the session proved, as the code (and its ID token) records it. */
export interface Proof {
  authTime: Date;
  amr: string[];
  /** The session had shown a second factor (not only at this proof). */
  secondFactor: boolean;
}
