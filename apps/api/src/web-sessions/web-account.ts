import type { UserRole } from '../users/user.entity.js';

/** The person a browser session is signed in as (passport's deserialized user). */
export interface WebUser {
  id: string;
  email: string;
  name: string;
  role: UserRole;
}

declare module 'express-session' {
  interface SessionData {
    /** When the person signed in: the session ends WEB_SESSION_MAX_SECONDS later, used or not. */
    signedInAt?: number;
    /** A token just created on the tokens page, sealed under the session id until the page shows it once. */
    newToken?: string;
    /** A message for the next page the person sees after a redirect (accountOf shows it once). */
    notice?: string;
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
