import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import passport from 'passport';
import { AuditService } from '../audit/audit.service.js';
import { AppConfig } from '../config/app-config.js';
import { UsersService } from '../users/users.service.js';
import type { WebUser } from '../web-sessions/web-account.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { DeviceCookies } from './device-cookies.js';

/**
 * Passport's sign-in and sign-out as promises, so the page controllers can answer a
 * failed sign-in with the form again (AuthGuard('local') would throw a 401 first).
 */
@Injectable()
export class SignInService {
  constructor(
    private readonly sessions: WebSessions,
    private readonly deviceCookies: DeviceCookies,
    private readonly audit: AuditService,
    private readonly users: UsersService,
    private readonly config: AppConfig,
  ) {}

  /** The person these form fields sign in, or null (passport-local, LocalStrategy). */
  checkCredentials(req: Request, res: Response): Promise<WebUser | null> {
    return new Promise((resolve, reject) =>
      passport.authenticate('local', { session: false }, (err: unknown, user: WebUser | false) => (err ? reject(err) : resolve(user || null)))(req, res, reject),
    );
  }

  /**
   * The end of a sign-in with a password (and the second factor, when the person has one): this
   * browser is trusted for the account (device cookie), the session starts, the sign-in is
   * audited with the browser and recorded for the admin list. With REQUIRE_SECOND_FACTOR, a
   * person without one is led to set it up.
   */
  async complete(req: Request, res: Response, user: WebUser, secondFactor: 'totp' | 'recovery-code' | 'passkey' | null): Promise<void> {
    this.deviceCookies.issue(res, user.email);
    await this.logIn(req, user, { secondFactor: secondFactor !== null });
    const browser = req.get('user-agent')?.slice(0, 200) ?? null;
    await this.audit.record('web.login', { userId: user.id, ip: req.ip, detail: { browser, ...(secondFactor ? { secondFactor } : {}) } });
    await this.users.recordSignIn(user.id);
  }

  /**
   * Signs the person in: passport regenerates the session id and saves the session
   * before the redirect is sent, so the moment of sign-in (where the absolute lifetime
   * starts) must be in it already: a browser follows the redirect as soon as it has
   * the headers. The anonymous session's CSRF token is not carried over. With
   * REQUIRE_SECOND_FACTOR, a sign-in without one leads every page to setting it up.
   */
  async logIn(req: Request, user: WebUser, options: { secondFactor?: boolean } = {}): Promise<void> {
    this.sessions.startSignedInSession(req);
    if (this.config.requireSecondFactor && !options.secondFactor) req.session.mustEnrolSecondFactor = true;
    await new Promise<void>((resolve, reject) => req.logIn(user, { session: true, keepSessionInfo: true }, (err) => (err ? reject(err) : resolve())));
  }

  /** Ends the session: its row is deleted, and the browser gets a fresh anonymous one. */
  async logOut(req: Request): Promise<void> {
    await new Promise<void>((resolve, reject) => req.logOut((err) => (err ? reject(err) : resolve())));
  }
}
