import type { Request } from 'express';
import type { User, UserRole } from '../users/user.entity.js';

/** The person a browser session is signed in as (passport's deserialized user). */
export interface WebUser {
  id: string;
  email: string;
  name: string;
  role: UserRole;
  /** Whether the owner followed a mailed link; REQUIRE_EMAIL_VERIFICATION gates approvals and tokens on it. */
  emailVerified: boolean;
  /** The account's credential epoch when this was read (users.credential_epoch). */
  credentialEpoch: number;
}

/** What a session keeps of a person. */
export const toWebUser = (user: Pick<User, 'id' | 'email' | 'name' | 'role' | 'emailVerifiedAt' | 'credentialEpoch'>): WebUser => ({
  id: user.id,
  email: user.email,
  name: user.name,
  role: user.role,
  emailVerified: user.emailVerifiedAt !== null,
  credentialEpoch: user.credentialEpoch,
});

declare module 'express-session' {
  interface SessionData {
    /** When the person signed in: the session ends WEB_SESSION_MAX_SECONDS later, used or not. */
    signedInAt?: number;
    /**
     * The account's credential epoch at sign-in: the session ends when the account's moves on (a
     * new password, address or disable; session.serializer.ts). Absent in sessions older than
     * the epoch, which count as epoch 0.
     */
    credentialEpoch?: number;
    /** A token just created on the tokens page, sealed under the session id until the page shows it once. */
    newToken?: string;
    /** A message for the next page the person sees after a redirect (accountOf shows it once). */
    notice?: string;
    /** The password was right and a second factor is asked for: who, since when (ms), and where to go then. */
    pendingSignIn?: { userId: string; at: number; next: string; credentialEpoch?: number; federated?: FederatedSignIn };
    /**
     * The identity-provider link this session was started through (federated_identities.id): the
     * session ends when that link is refused by its provider or the provider is disabled (the
     * serializer checks it; web_sessions.federated_link_id lifts it out for the statements that end them).
     */
    federatedLinkId?: string;
    /**
     * A provider's sign-in whose address has a Prospect account not linked to it yet: linked only
     * once the person proves that account in this browser (a full sign-in begun after `at`, or the
     * link mailed to the address, whose hash is kept here). Bound to the account's state then (`epoch`).
     */
    pendingFederatedLink?: PendingFederatedLink;
    /** When the person last proved who they are (sign-in, or a re-confirmation): sudo mode lasts SUDO_SECONDS from it. */
    sudoAt?: number;
    /** When the person last re-confirmed on the sudo page (password, code, or a fresh sign-in at their provider): not set by a sign-in. */
    reconfirmedAt?: number;
    /** How the newest proof (the sign-in, or a re-confirmation since) was made, RFC 8176 (session-proof.ts). */
    proofAmr?: string[];
    /** The session has shown a second factor: at its sign-in, a re-confirmation with a code, or a factor set up in it. */
    secondFactorShown?: boolean;
    /** The challenge of the passkey ceremony under way (registration or sign-in), used once. */
    passkeyChallenge?: string;
    /** A TOTP key being set up, sealed, until its first code confirms it. */
    pendingTotp?: string;
    /** REQUIRE_SECOND_FACTOR: signed in without one; every page leads to setting it up. */
    mustEnrolSecondFactor?: boolean;
  }
}

/** A sign-in through an identity provider: the link it came through, and the provider's name for the log. */
export interface FederatedSignIn {
  linkId: string;
  providerId: string;
  providerName: string;
  /** The organization whose provider it is (issue #44): its sign-ins show in the organization's log too. */
  organizationId?: string;
}

/** See SessionData.pendingFederatedLink. */
export interface PendingFederatedLink {
  providerId: string;
  providerName: string;
  issuer: string;
  subject: string;
  /** The address the provider asserted (verified), which is the account's. */
  email: string;
  userId: string;
  /** The account's credential epoch when the provider's answer came. */
  epoch: number;
  at: number;
  next: string;
  /** The provider's amr/acr showed a second factor. */
  secondFactor: boolean;
  /** The provider's refresh token, sealed (federation/relying-party.ts), kept with the link once made. */
  refreshTokenSealed?: string;
  /** The mailed link's SHA-256 (base64url) and when it was sent. */
  mail?: { hash: string; at: number };
}

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by passport.session() on the routes that read web sessions (userProperty). */
    webUser?: WebUser;
  }
}

/** Where passport keeps the signed-in person, apart from `req.user`, which the bearer guard owns. */
export const WEB_USER_PROPERTY = 'webUser';

/**
 * Saves the session now, before a redirect (or an answer a page's script follows) is sent:
 * express-session sends the headers first and saves after, so a browser following them at once
 * could read the session as it was before this request changed it.
 */
export const saveSession = (req: Request) => new Promise<void>((resolve, reject) => req.session.save((err) => (err ? reject(err) : resolve())));

/** A new session id for this session, its data dropped (express-session's regenerate, as a promise). */
export const regenerateSession = (req: Request) => new Promise<void>((resolve, reject) => req.session.regenerate((err) => (err ? reject(err) : resolve())));

/**
 * When this browser's session signed in: its credential's issue time, as a token's is its grant's
 * approval (an organization the person left after it is not acted for through it; organizations/
 * departureEndsIt). A signed-in session always has one (the absolute lifetime ends any without);
 * 0 otherwise, so that one would predate every departure.
 */
export const sessionIssuedAt = (req: Request): Date => new Date(req.session.signedInAt ?? 0);
