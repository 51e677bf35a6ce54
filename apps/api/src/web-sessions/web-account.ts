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
}

/** What a session keeps of a person. */
export const toWebUser = (user: Pick<User, 'id' | 'email' | 'name' | 'role' | 'emailVerifiedAt'>): WebUser => ({
  id: user.id,
  email: user.email,
  name: user.name,
  role: user.role,
  emailVerified: user.emailVerifiedAt !== null,
});

declare module 'express-session' {
  interface SessionData {
    /** When the person signed in: the session ends WEB_SESSION_MAX_SECONDS later, used or not. */
    signedInAt?: number;
    /** A token just created on the tokens page, sealed under the session id until the page shows it once. */
    newToken?: string;
    /** A message for the next page the person sees after a redirect (accountOf shows it once). */
    notice?: string;
    /** The password was right and a second factor is asked for: who, since when (ms), and where to go then. */
    pendingSignIn?: { userId: string; at: number; next: string };
    /** When the person last proved who they are (sign-in, or a re-confirmation): sudo mode lasts SUDO_SECONDS from it. */
    sudoAt?: number;
    /** The challenge of the passkey ceremony under way (registration or sign-in), used once. */
    passkeyChallenge?: string;
    /** A TOTP key being set up, sealed, until its first code confirms it. */
    pendingTotp?: string;
    /** REQUIRE_SECOND_FACTOR: signed in without one; every page leads to setting it up. */
    mustEnrolSecondFactor?: boolean;
  }
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
