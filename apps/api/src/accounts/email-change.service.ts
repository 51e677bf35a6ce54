import { TokensService } from '../tokens/tokens.service.js';
import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { isUniqueViolation } from '../database/sql.js';
import { composeMail, Mailer } from '../mail/mailer.js';
import { maskAddress } from '../mail/mask-address.js';
import { RateLimits, type RecognisedBrowser } from '../rate-limits/rate-limits.js';
import { normalizeEmail, UsersService } from '../users/users.service.js';
import { AccountService, ManagedByProviderError, type OwnerConfirmation } from './account.service.js';
import { FederationPolicy } from '../federation/federation-policy.js';
import { LinkRedemptions } from './link-redemptions.js';
import { AccountTokensRepository } from './account-tokens.repository.js';
import { UnitOfWork } from '../database/unit-of-work.js';

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
  private readonly logger = new Logger(EmailChangeService.name);

  constructor(
    private readonly redemptions: LinkRedemptions,
    private readonly account: AccountService,
    private readonly users: UsersService,
    private readonly links: AccountTokensRepository,
    private readonly limits: RateLimits,
    private readonly mailer: Mailer,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly federation: FederationPolicy,
    private readonly tokens: TokensService,
  ) {}

  /**
   * Mails a confirmation link to `newEmail`, confirmed by the owner (AccountService.confirmManagedHere:
   * the password, counted like a sign-in, or a re-confirmation a moment ago for an account without one),
   * a few an hour. The old address is told of every request, whether or not the new one is
   * taken (telling only for a free one would answer "is this address registered?"); an address
   * that has an account gets no link, and the answer is the same. The notice, the link and its
   * mail are queued in one transaction. The new address is anyone's a signed-in person types, so
   * past its hourly limit of unsolicited mails (RateLimits.mailToRecipient) it gets no link either,
   * with a log line, and the answer is the same.
   * `browser`: the signed-in session asking, whose failed passwords count apart (AccountService.checkPassword).
   * @throws WrongPasswordError, TooManyRequests, SameEmailError, ConfirmInSudoMode, ManagedByProviderError
   */
  async request(user: { id: string; email: string; name: string }, newEmailInput: string, confirmation: OwnerConfirmation, ip: string | null, browser: RecognisedBrowser | null): Promise<void> {
    const newEmail = normalizeEmail(newEmailInput);
    if (newEmail === user.email) throw new SameEmailError();
    await this.account.confirmManagedHere(user, confirmation, ip, browser);
    await this.limits.requestAddressMail(user.id);
    const linkWanted = !(await this.users.findByEmail(newEmail)) && (await this.mayWriteTo(newEmail));
    const token = generateSecret(EMAIL_CHANGE_TOKEN_PREFIX);
    const now = this.clock.now();
    try {
      await this.queueMails(user, newEmail, linkWanted, token, now, ip);
    } catch (err) {
      // Not queued: the hourly limit counts mails sent, not failures.
      await this.limits.addressMailNotQueued(user.id);
      throw err;
    }
  }

  /** The notice to the old address and, when wanted, the link to the new one with its row: one transaction. */
  private queueMails(user: { id: string; email: string; name: string }, newEmail: string, linkWanted: boolean, token: string, now: Date, ip: string | null): Promise<void> {
    return this.uow.run(async (tx) => {
      await this.mailer.send(
        composeMail(user.email, 'A change of your Prospect e-mail address was asked for', {
          paragraphs: [
            `Hello ${user.name},`,
            `Someone signed in to your Prospect account at ${this.config.publicUrl}${ip ? ` from the address ${ip}` : ''} asked to change its e-mail address to ${newEmail}. It changes only when the link sent there is followed.`,
            'If it was not you, change your password now: whoever did it knew it. That also ends the link.',
          ],
          link: { url: `${this.config.publicUrl}/settings/account`, label: 'Your account' },
        }),
        tx,
      );
      if (!linkWanted) return;
      await this.links.insertForUser('email_change', user.id, sha256(token), now, new Date(now.getTime() + EMAIL_CHANGE_LINK_HOURS * 3_600_000), tx, newEmail);
      await this.mailer.send(
        composeMail(newEmail, 'Confirm your new e-mail address for Prospect', {
          paragraphs: [`Hello ${user.name},`, `Please confirm that this is the new address of your Prospect account at ${this.config.publicUrl}. The link works once, for ${EMAIL_CHANGE_LINK_HOURS} hours.`],
          link: { url: `${this.config.publicUrl}/email-change?token=${token}`, label: 'Confirm the new address' },
          footer: 'If you did not ask for this, ignore this mail: nothing changes.',
        }),
        tx,
      );
    });
  }

  /** Whether the new address may get one more mail it did not ask for this hour; logged when not. */
  private async mayWriteTo(newEmail: string): Promise<boolean> {
    if (await this.limits.mailToRecipient(newEmail)) return true;
    this.logger.warn(`address-change link to ${maskAddress(newEmail)} not queued: the address had its unsolicited mails for the hour`);
    return false;
  }

  /** The account and new address of a link that still works, for the page that asks to confirm. */
  async usableFor(token: string): Promise<{ userId: string; email: string; newEmail: string } | undefined> {
    if (!looksLikeSecret(token, EMAIL_CHANGE_TOKEN_PREFIX)) return undefined;
    return this.links.findUsableEmailChange(sha256(token), this.clock.now());
  }

  /**
   * Follows the link: the address changes (and counts as verified), the old address is told. Not
   * out of a domain a provider has come to enforce since the link was mailed (the provider manages
   * that address now, as AccountService.confirmManagedHere says at the request).
   * @throws UnusableEmailChangeLinkError, EmailTakenError, ManagedByProviderError
   */
  async confirm(token: string, ip: string | null): Promise<{ userId: string; email: string }> {
    const link = await this.usableFor(token);
    if (!link) throw new UnusableEmailChangeLinkError();
    const enforcing = await this.federation.enforcingProviderFor(link.email);
    if (enforcing) throw new ManagedByProviderError(enforcing.displayName);
    let changed;
    try {
      changed = await this.redemptions.redeemEmailChange(sha256(token), this.clock.now(), ip);
    } catch (err) {
      if (isUniqueViolation(err)) throw new EmailTakenError();
      throw err;
    }
    if (!changed) throw new UnusableEmailChangeLinkError();
    // Who controls the account changed (a new credential epoch): what was approved under the old address ends.
    await this.tokens.revokeGrantsOfUser(changed.userId, 'address changed', ip);
    await this.mailer.send(
      composeMail(changed.oldEmail, 'Your Prospect e-mail address was changed', {
        paragraphs: [
          `Hello ${changed.name},`,
          `The e-mail address of your Prospect account at ${this.config.publicUrl} is now ${changed.email}; mail no longer comes here.`,
          'If it was not you, tell your administrator at once.',
        ],
      }),
    );
    return { userId: changed.userId, email: changed.email };
  }
}
