import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { composeMail, Mailer } from '../mail/mailer.js';
import { hashPassword } from '../users/password.js';
import { UsersService } from '../users/users.service.js';
import { LinkRedemptions } from './link-redemptions.js';
import { AccountTokensRepository, type LinkAccount } from './account-tokens.repository.js';
import { FederationPolicy } from '../federation/federation-policy.js';
import { UnitOfWork } from '../database/unit-of-work.js';

/** Prefix of an invitation link's token (256 random bits). */
export const INVITATION_TOKEN_PREFIX = 'prsi_';
/** How long an invitation works. */
export const INVITATION_DAYS = 7;

/** The link is unknown, used or expired. */
export class UnusableInvitationError extends Error {}

/**
 * An administrator invites a person by e-mail: the account exists at once (without a password),
 * and the mailed link lets its owner choose one; following it also verifies the address.
 */
@Injectable()
export class InvitationsService {
  constructor(
    private readonly redemptions: LinkRedemptions,
    private readonly users: UsersService,
    private readonly links: AccountTokensRepository,
    private readonly audit: AuditService,
    private readonly mailer: Mailer,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
    private readonly federation: FederationPolicy,
  ) {}

  /**
   * Creates the account, its link and the mail that carries it in one transaction, audited with the inviting admin.
   * @throws ApiException 409 when the address has an account.
   */
  async invite(input: { email: string; name: string }, adminId: string, ip: string | null): Promise<string> {
    const token = generateSecret(INVITATION_TOKEN_PREFIX);
    const now = this.clock.now();
    return this.uow.run(async (tx) => {
      const user = await this.users.create(input, tx);
      await this.links.insertForUser('invitation', user.id, sha256(token), now, new Date(now.getTime() + INVITATION_DAYS * 86_400_000), tx);
      await this.audit.record('admin.user_invite', { userId: adminId, ip, detail: { accountId: user.id } }, tx);
      await this.mailer.send(
        composeMail(user.email, 'You are invited to Prospect', {
          paragraphs: [`Hello ${user.name},`, `You are invited to Prospect at ${this.config.publicUrl}. Choose your password to sign in: the link works once, for ${INVITATION_DAYS} days.`],
          link: { url: `${this.config.publicUrl}/invitation?token=${token}`, label: 'Choose your password' },
          footer: 'If you did not expect this, ignore this mail.',
        }),
        tx,
      );
      return user.id;
    });
  }

  /** The invited account while its link works (none once the account has a password by any path), for the page that shows the form. */
  async usableFor(token: string): Promise<LinkAccount | undefined> {
    if (!looksLikeSecret(token, INVITATION_TOKEN_PREFIX)) return undefined;
    const account = await this.links.findUsable('invitation', sha256(token), this.clock.now());
    // A domain a provider enforces signs in there: an invitation sets no password (issue #34).
    return account && !(await this.federation.enforcingProviderFor(account.email)) ? account : undefined;
  }

  /**
   * Sets the first password through the link, once; the address counts as verified. Setting a
   * password by any path (this, or a reset) is a new credential epoch, so the invitation is used
   * up then too.
   * @throws UnusableInvitationError for a link that is unknown, used or expired.
   */
  async accept(token: string, password: string, ip: string | null): Promise<LinkAccount> {
    if (!(await this.usableFor(token))) throw new UnusableInvitationError();
    const account = await this.redemptions.redeemPasswordLink('invitation', sha256(token), await hashPassword(password), this.clock.now(), ip);
    if (!account) throw new UnusableInvitationError(); // used by a racing request meanwhile
    return account;
  }
}
