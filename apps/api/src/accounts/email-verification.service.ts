import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { composeMail, Mailer } from '../mail/mailer.js';
import { maskAddress } from '../mail/mask-address.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { LinkRedemptions } from './link-redemptions.js';
import { AccountTokensRepository, type LinkAccount } from './account-tokens.repository.js';
import { UnitOfWork } from '../database/unit-of-work.js';

/** The account a mailed link is for, for the pages (which import services, never repositories). */
export type { LinkAccount };

/** Prefix of a verification link's token (256 random bits). */
export const VERIFY_TOKEN_PREFIX = 'prsv_';
/** How long a verification link works. */
export const VERIFY_LINK_HOURS = 24;

/**
 * Proving that a person owns their address: a mailed single-use link (only its hash stored).
 * Until then, with REQUIRE_EMAIL_VERIFICATION, they can sign in but not approve a device login
 * or create a token.
 */
@Injectable()
export class EmailVerificationService {
  private readonly logger = new Logger(EmailVerificationService.name);

  constructor(
    private readonly redemptions: LinkRedemptions,
    private readonly links: AccountTokensRepository,
    private readonly limits: RateLimits,
    private readonly mailer: Mailer,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
  ) {}

  /** Whether this person must verify before approving or creating tokens. */
  blocks(user: { emailVerified?: boolean }): boolean {
    return this.config.requireEmailVerification && user.emailVerified === false;
  }

  /**
   * Mails a verification link; `next` (a path on this site, already checked) is where the link
   * leads once followed. `resend`: asked for again, counted per account first: every request
   * counted is a mail queued with its link (one transaction), sent however long the mail server
   * is away, so the limit counts mails, not a mail server's failures.
   * @throws TooManyRequests when resent too often.
   */
  async send(userId: string, next: string, options: { resend: boolean }): Promise<void> {
    if (options.resend) await this.limits.requestAddressMail(userId);
    const token = generateSecret(VERIFY_TOKEN_PREFIX);
    const now = this.clock.now();
    const url = new URL('/verify-email', this.config.publicUrl);
    url.searchParams.set('token', token);
    if (next !== '/') url.searchParams.set('next', next);
    try {
      await this.uow.run(async (tx) => {
        const account = await this.links.insertForUser('email_verification', userId, sha256(token), now, new Date(now.getTime() + VERIFY_LINK_HOURS * 3_600_000), tx);
        if (!account) return;
        await this.mailer.send(
          composeMail(account.email, 'Confirm your e-mail address for Prospect', {
            paragraphs: [`Hello ${account.name},`, `Please confirm that this is your address for your Prospect account at ${this.config.publicUrl}. The link works once, for ${VERIFY_LINK_HOURS} hours.`],
            link: { url: url.toString(), label: 'Confirm my address' },
            footer: 'If you did not sign up, ignore this mail: the account stays unconfirmed.',
          }),
          tx,
        );
      });
    } catch (err) {
      // Not queued: a mail asked for again is counted when it is sent, not when it fails.
      if (options.resend) await this.limits.addressMailNotQueued(userId);
      throw err;
    }
  }

  /**
   * The owner of a registered address was tried at sign-up: tell them, instead of telling the one
   * who tried. Anyone can ask for this mail to anyone's address, so past the address's hourly
   * limit (RateLimits.mailToRecipient) it is dropped, with a log line: the answer stays the same.
   */
  async tellOwnerOfSignupAttempt(owner: { email: string; name: string }): Promise<void> {
    if (!(await this.limits.mailToRecipient(owner.email))) {
      this.logger.warn(`sign-up attempt mail to ${maskAddress(owner.email)} not queued: the address had its unsolicited mails for the hour`);
      return;
    }
    await this.mailer.send(
      composeMail(owner.email, 'Someone tried to sign up to Prospect with your address', {
        paragraphs: [
          `Hello ${owner.name},`,
          `Someone tried to create a Prospect account at ${this.config.publicUrl} with this address, which already has one. Nothing was changed.`,
          'If it was you, sign in instead; if you forgot your password, reset it:',
        ],
        link: { url: `${this.config.publicUrl}/password/forgot`, label: 'Reset your password' },
      }),
    );
  }

  /** The account a link is for while it still works (for the address it was mailed to, in the account's state then), for the confirmation page. */
  usableFor(token: string): Promise<LinkAccount | undefined> {
    if (!looksLikeSecret(token, VERIFY_TOKEN_PREFIX)) return Promise.resolve(undefined);
    return this.links.findUsable('email_verification', sha256(token), this.clock.now());
  }

  /**
   * Uses a link: the account it verified, or undefined for a link that no longer works. The
   * caller has made sure that the one following the link created the account (its signed-in
   * session, or its password): a mailbox alone proves the address, not who set the password.
   */
  verify(token: string, ip: string | null): Promise<LinkAccount | undefined> {
    if (!looksLikeSecret(token, VERIFY_TOKEN_PREFIX)) return Promise.resolve(undefined);
    return this.redemptions.redeemVerification(sha256(token), this.clock.now(), ip);
  }
}
