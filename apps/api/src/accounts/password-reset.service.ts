import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { composeMail, Mailer } from '../mail/mailer.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { TokensService } from '../tokens/tokens.service.js';
import { hashPassword } from '../users/password.js';
import { normalizeEmail, UsersService } from '../users/users.service.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { passwordChangedMail } from './account-mails.js';
import { LinkRedemptions } from './link-redemptions.js';
import { AccountTokensRepository, type LinkAccount } from './account-tokens.repository.js';
import { FederationPolicy, SignInThroughProviderRequired } from '../federation/federation-policy.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';

/** Prefix of a password-reset link's token (256 random bits), so a leaked one is recognised. */
export const RESET_TOKEN_PREFIX = 'prsp_';
/** How long a reset link works. */
export const RESET_LINK_MINUTES = 30;

/** The link is unknown, used or expired. */
export class UnusableResetLinkError extends Error {}

/**
 * "Forgot your password?": a mailed single-use link (only its hash stored, 30 minutes) that sets a
 * new password. The request's answer is the same whether or not the address has an account.
 */
@Injectable()
export class PasswordResetService {
  constructor(
    private readonly redemptions: LinkRedemptions,
    private readonly resets: AccountTokensRepository,
    private readonly limits: RateLimits,
    private readonly mailer: Mailer,
    private readonly webSessions: WebSessions,
    private readonly tokens: TokensService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly federation: FederationPolicy,
    private readonly users: UsersService,
  ) {}

  /**
   * Mails a reset link if an account uses `email`. Counted first (per account and per address),
   * so guessing cannot tell either; the same work and answer for an unknown address, but the mail.
   * The link and its mail are queued in one transaction: both or neither.
   * @throws TooManyRequests
   */
  async request(emailInput: string, ip: string | null): Promise<void> {
    const email = normalizeEmail(emailInput);
    await this.limits.requestPasswordReset(email, ip ?? '');
    // A domain a provider enforces has no passwords here (issue #34): no link is mailed, and the answer is the same.
    if (await this.federation.enforcingProviderFor(email)) return;
    const token = generateSecret(RESET_TOKEN_PREFIX);
    const now = this.clock.now();
    await this.uow.run(async (tx) => {
      const account = await this.resets.insertResetForEmail(email, sha256(token), now, new Date(now.getTime() + RESET_LINK_MINUTES * 60_000), ip, tx);
      if (account) await this.mailLink(account, token, tx);
    });
  }

  /** Mails a reset link to this account, as an administrator asks for it (audited by the caller); false when there is no such account. */
  async sendLinkTo(userId: string): Promise<boolean> {
    const owner = await this.users.findById(userId);
    const provider = owner && (await this.federation.enforcingProviderFor(owner.email));
    if (provider) throw new SignInThroughProviderRequired(owner.email, provider);
    const token = generateSecret(RESET_TOKEN_PREFIX);
    const now = this.clock.now();
    return this.uow.run(async (tx) => {
      const account = await this.resets.insertForUser('password_reset', userId, sha256(token), now, new Date(now.getTime() + RESET_LINK_MINUTES * 60_000), tx);
      if (account) await this.mailLink(account, token, tx);
      return account !== undefined;
    });
  }

  private mailLink(account: LinkAccount, token: string, tx: Tx): Promise<void> {
    const link = `${this.config.publicUrl}/password/reset?token=${token}`;
    return this.mailer.send(
      composeMail(account.email, 'Reset your Prospect password', {
        paragraphs: [`Hello ${account.name},`, `Someone (we hope you, or your administrator) asked to reset the password of your Prospect account at ${this.config.publicUrl}. The link works once, for ${RESET_LINK_MINUTES} minutes.`],
        link: { url: link, label: 'Choose a new password' },
        footer: 'If nobody asked for it, ignore this mail: your password stays as it is.',
      }),
      tx,
    );
  }

  /** Whether a link still works, for the page that shows the new-password form. */
  async isUsable(token: string): Promise<boolean> {
    if (!looksLikeSecret(token, RESET_TOKEN_PREFIX)) return false;
    const account = await this.resets.findUsable('password_reset', sha256(token), this.clock.now());
    // A link mailed before a provider enforced the domain sets no password now (issue #34).
    return account !== undefined && !(await this.federation.enforcingProviderFor(account.email));
  }

  /**
   * Sets the new password through a link, once: every web session, every grant (CLI sessions,
   * connected apps) and every other mailed link of the account ends (this browser's too), the tokens
   * made on the tokens page are revoked when asked, and the owner is told by mail. A reset that proves an address nobody had proven before (someone else may have
   * signed up with it: account pre-hijacking) also ends every second factor (in the redeeming
   * statement) and every token: the account is then the address owner's alone. The account as
   * the reset left it (its address and new credential epoch).
   * @throws UnusableResetLinkError for a link that is unknown, used, expired or issued before the account changed.
   */
  async reset(token: string, newPassword: string, revokeCliTokens: boolean, ip: string | null): Promise<{ id: string; email: string; credentialEpoch: number }> {
    if (!(await this.isUsable(token))) throw new UnusableResetLinkError();
    const account = await this.redemptions.redeemPasswordLink('password_reset', sha256(token), await hashPassword(newPassword), this.clock.now(), ip);
    if (!account) throw new UnusableResetLinkError(); // used by a racing request meanwhile
    await this.webSessions.endAllFor(account.userId);
    const revoke = revokeCliTokens || account.ownershipProven;
    // The grants approved under the old password end either way; the tokens made on the tokens page only when asked.
    if (revoke) await this.tokens.revokeAllForUser(account.userId, ip);
    else await this.tokens.revokeGrantsOfUser(account.userId, 'password reset', ip);
    await this.mailer.send(passwordChangedMail(account, this.config.publicUrl, { how: 'with a reset link', ip, cliTokensRevoked: revoke }));
    return { id: account.userId, email: account.email, credentialEpoch: account.credentialEpoch };
  }
}
