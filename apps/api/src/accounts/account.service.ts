import { Injectable } from '@nestjs/common';
import { TokenRevocations } from '../tokens/token-revocations.js';
import { AppConfig } from '../config/app-config.js';
import { Mailer } from '../mail/mailer.js';
import { type RecognisedBrowser, RateLimits } from '../rate-limits/rate-limits.js';
import { hashPassword } from '../users/password.js';
import { UsersService } from '../users/users.service.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { accountDeletedMail, passwordChangedMail } from './account-mails.js';

/** The current password given to change it was wrong. */
export class WrongPasswordError extends Error {}

/** The account is the only administrator's: another admin must exist first. */
export class LastAdminError extends Error {}

/** What a signed-in person changes about their own account on /settings/account. */
@Injectable()
export class AccountService {
  constructor(
    private readonly users: UsersService,
    private readonly limits: RateLimits,
    private readonly webSessions: WebSessions,
    private readonly mailer: Mailer,
    private readonly config: AppConfig,
    private readonly revocations: TokenRevocations,
  ) {}

  /** A new display name (validated by the caller), audited. */
  async rename(userId: string, name: string, ip: string | null): Promise<void> {
    await this.users.changeWithAudit(userId, { name }, 'account.rename', ip);
  }

  /**
   * A new password, given the current one: a wrong current password is counted like a failed
   * sign-in (a stolen session must not become a way to guess the password). Every web session of
   * the account ends (the caller signs this browser in again), and the owner is told by mail.
   * `browser`: the signed-in session asking (checkPassword).
   * @throws WrongPasswordError, TooManyRequests
   */
  async changePassword(user: { id: string; email: string; name: string }, current: string, next: string, ip: string | null, browser: RecognisedBrowser | null): Promise<void> {
    await this.checkPassword(user.email, current, ip, browser);
    await this.users.changeWithAudit(user.id, { passwordHash: await hashPassword(next) }, 'password.change', ip);
    await this.webSessions.endAllFor(user.id);
    await this.mailer.send(passwordChangedMail(user, this.config.publicUrl, { how: 'on its account page', ip, cliTokensRevoked: false }));
  }

  /**
   * Deletes the account, given its password (counted like a sign-in): every token, refresh
   * family, web session and link ends with it, and every replica forgets its tokens at once (the
   * users trigger announces it); its audit events are kept without personal data, and the
   * address gets one last mail. Not the last administrator's account.
   * @throws WrongPasswordError, LastAdminError, TooManyRequests
   */
  async deleteAccount(user: { id: string; email: string; name: string }, password: string, ip: string | null, browser: RecognisedBrowser | null): Promise<void> {
    await this.checkPassword(user.email, password, ip, browser);
    const outcome = await this.users.deleteAccount(user.id);
    if (outcome === 'last-admin') throw new LastAdminError();
    this.revocations.userRevoked(user.id);
    await this.mailer.send(accountDeletedMail(user, this.config.publicUrl, ip));
  }

  /**
   * Checks the account's password, counted before the check like a sign-in: from the owner's
   * recognised browser (the signed-in session asking, web/device-cookies.ts signedInBrowser)
   * against that browser alone, so failed sign-ins by others never make the owner's right
   * password a 429; without one, against the account and the address.
   * @throws WrongPasswordError, TooManyRequests
   */
  async checkPassword(email: string, password: string, ip: string | null, browser: RecognisedBrowser | null): Promise<void> {
    await this.limits.attemptSignIn(email, ip ?? '', browser);
    if (!(await this.users.authenticate(email, password))) throw new WrongPasswordError();
    await this.limits.signInSucceeded(email, ip ?? '', browser);
  }
}
