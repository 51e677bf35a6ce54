import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { isUniqueViolation } from '../database/sql.js';
import { composeMail, Mailer } from '../mail/mailer.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { normalizeEmail, UsersService } from '../users/users.service.js';
import { AccountService } from './account.service.js';
import { AccountTokensRepository } from './account-tokens.repository.js';

/** Prefix of an address-change link's token (256 random bits). */
export const EMAIL_CHANGE_TOKEN_PREFIX = 'prse_';
export const EMAIL_CHANGE_LINK_HOURS = 24;

/** The new address is the account's own already. */
export class SameEmailError extends Error {}
/** The link is unknown, used or expired. */
export class UnusableEmailChangeLinkError extends Error {}
/** The new address got an account of its own since the link was sent. */
export class EmailTakenError extends Error {}

/**
 * Changing one's address: asked with the password, proven by a link mailed to the new address,
 * and told to the old one both when asked and when done. Until the link is followed nothing changes.
 */
@Injectable()
export class EmailChangeService {
  constructor(
    private readonly account: AccountService,
    private readonly users: UsersService,
    private readonly links: AccountTokensRepository,
    private readonly limits: RateLimits,
    private readonly mailer: Mailer,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  /**
   * Mails a confirmation link to `newEmail`, given the current password (counted like a sign-in),
   * a few an hour. An address that has an account gets nothing, but the answer is the same.
   * @throws WrongPasswordError, TooManyRequests, SameEmailError
   */
  async request(user: { id: string; email: string; name: string }, newEmailInput: string, password: string, ip: string | null): Promise<void> {
    const newEmail = normalizeEmail(newEmailInput);
    if (newEmail === user.email) throw new SameEmailError();
    await this.account.checkPassword(user.email, password, ip);
    await this.limits.requestAddressMail(user.id);
    if (await this.users.findByEmail(newEmail)) return;
    const token = generateSecret(EMAIL_CHANGE_TOKEN_PREFIX);
    const now = this.clock.now();
    await this.links.insertForUser('email_change', user.id, sha256(token), now, new Date(now.getTime() + EMAIL_CHANGE_LINK_HOURS * 3_600_000), undefined, newEmail);
    this.mailer.send(
      composeMail(newEmail, 'Confirm your new e-mail address for Prospect', {
        paragraphs: [`Hello ${user.name},`, `Please confirm that this is the new address of your Prospect account at ${this.config.publicUrl}. The link works once, for ${EMAIL_CHANGE_LINK_HOURS} hours.`],
        link: { url: `${this.config.publicUrl}/email-change?token=${token}`, label: 'Confirm the new address' },
        footer: 'If you did not ask for this, ignore this mail: nothing changes.',
      }),
    );
    this.mailer.send(
      composeMail(user.email, 'A change of your Prospect e-mail address was asked for', {
        paragraphs: [
          `Hello ${user.name},`,
          `Someone signed in to your Prospect account at ${this.config.publicUrl}${ip ? ` from the address ${ip}` : ''} asked to change its e-mail address to ${newEmail}. It changes only when the link sent there is followed.`,
          'If it was not you, change your password now: whoever did it knew it.',
        ],
        link: { url: `${this.config.publicUrl}/settings/account`, label: 'Your account' },
      }),
    );
  }

  /**
   * Follows the link: the address changes (and counts as verified), the old address is told.
   * @throws UnusableEmailChangeLinkError, EmailTakenError
   */
  async confirm(token: string, ip: string | null): Promise<{ email: string }> {
    if (!looksLikeSecret(token, EMAIL_CHANGE_TOKEN_PREFIX)) throw new UnusableEmailChangeLinkError();
    let changed;
    try {
      changed = await this.links.redeemEmailChange(sha256(token), this.clock.now(), ip);
    } catch (err) {
      if (isUniqueViolation(err)) throw new EmailTakenError();
      throw err;
    }
    if (!changed) throw new UnusableEmailChangeLinkError();
    this.mailer.send(
      composeMail(changed.oldEmail, 'Your Prospect e-mail address was changed', {
        paragraphs: [
          `Hello ${changed.name},`,
          `The e-mail address of your Prospect account at ${this.config.publicUrl} is now ${changed.email}; mail no longer comes here.`,
          'If it was not you, tell your administrator at once.',
        ],
      }),
    );
    return { email: changed.email };
  }
}
