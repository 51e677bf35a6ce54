import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import passport from 'passport';
import type { WebUser } from '../web-sessions/web-account.js';
import { WebSessions } from '../web-sessions/web-sessions.js';

/**
 * Passport's sign-in and sign-out as promises, so the page controllers can answer a
 * failed sign-in with the form again (AuthGuard('local') would throw a 401 first).
 */
@Injectable()
export class SignInService {
  constructor(private readonly sessions: WebSessions) {}

  /** The person these form fields sign in, or null (passport-local, LocalStrategy). */
  checkCredentials(req: Request, res: Response): Promise<WebUser | null> {
    return new Promise((resolve, reject) =>
      passport.authenticate('local', { session: false }, (err: unknown, user: WebUser | false) => (err ? reject(err) : resolve(user || null)))(req, res, reject),
    );
  }

  /**
   * Signs the person in: passport regenerates the session id and saves the session
   * before the redirect is sent, so the moment of sign-in (where the absolute lifetime
   * starts) must be in it already: a browser follows the redirect as soon as it has
   * the headers. The anonymous session's CSRF token is not carried over.
   */
  async logIn(req: Request, user: WebUser): Promise<void> {
    this.sessions.startSignedInSession(req);
    await new Promise<void>((resolve, reject) => req.logIn(user, { session: true, keepSessionInfo: true }, (err) => (err ? reject(err) : resolve())));
  }

  /** Ends the session: its row is deleted, and the browser gets a fresh anonymous one. */
  async logOut(req: Request): Promise<void> {
    await new Promise<void>((resolve, reject) => req.logOut((err) => (err ? reject(err) : resolve())));
  }
}
