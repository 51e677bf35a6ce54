import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { UsersService } from '../users/users.service.js';
import { AccountTokensRepository, type LinkAccount } from './account-tokens.repository.js';

/** The links that set a password, and the event each audits when used. */
const PASSWORD_LINKS = { password_reset: 'password.reset', invitation: 'account.invitation_accept' } as const;

/**
 * A mailed link's use, each one unit of work (of two racing uses one wins: the link's row is
 * updated first, conditionally): the link used up, the account changed (users/ owns the row), the
 * account's other links used up, what the account's new state ends deleted, and the audit events,
 * commit together or not at all, in the order the single statement of before wrote them
 * (link, account, other links, factors, events), so no new lock order appears.
 */
@Injectable()
export class LinkRedemptions {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly links: AccountTokensRepository,
    private readonly users: UsersService,
    private readonly audit: AuditService,
  ) {}

  /**
   * Uses an address-change link: the account's address becomes the new one (verified), its
   * credential epoch moves on (every other link, and every session but the ones its caller renews,
   * ends), audited. The account with its old and new address; undefined for a link that no longer works.
   * @throws a unique violation (isUniqueViolation) when the new address has an account by now.
   */
  redeemEmailChange(tokenHash: Buffer, now: Date, ip: string | null): Promise<(LinkAccount & { oldEmail: string }) | undefined> {
    return this.uow.run(async (tx) => {
      const used = await this.links.use(tx, 'email_change', tokenHash, now);
      const account = used && (await this.users.setEmailFromLink(tx, used.userId, used.newEmail!, now));
      if (!used || !account) return undefined;
      await this.links.useUpOthers(tx, used.userId, tokenHash, now);
      await this.audit.record('account.email_change', { userId: account.id, ip, at: now }, tx);
      return { userId: account.id, email: account.email, name: account.name, oldEmail: used.email };
    });
  }

  /**
   * Uses a reset or invitation link and sets the password. A new password is a new credential
   * epoch: every other link of every kind is used up and every web session ends (they record the
   * epoch). The address counts as verified (the mail reached its owner). When it was not verified
   * before, whoever created the account never proved the address, so whatever they set up ends
   * here too (the pre-hijacking defence): second factors and passkeys are deleted in the same
   * transaction (`ownershipProven`; the caller revokes the tokens). Audited. The account, or
   * undefined for a link that no longer works.
   */
  redeemPasswordLink(
    purpose: keyof typeof PASSWORD_LINKS,
    tokenHash: Buffer,
    passwordHash: string,
    now: Date,
    ip: string | null,
  ): Promise<(LinkAccount & { ownershipProven: boolean; credentialEpoch: number }) | undefined> {
    return this.uow.run(async (tx) => {
      const used = await this.links.use(tx, purpose, tokenHash, now);
      const account = used && (await this.users.setPasswordFromLink(tx, used.userId, passwordHash, now));
      if (!used || !account) return undefined;
      await this.links.useUpOthers(tx, used.userId, tokenHash, now);
      if (used.unproven) await this.links.deleteFactors(tx, used.userId);
      await this.audit.record(PASSWORD_LINKS[purpose], { userId: account.id, ip, at: now }, tx);
      const ownershipProven = used.unproven && purpose === 'password_reset';
      if (ownershipProven) await this.audit.record('account.ownership_proven', { userId: used.userId, ip, at: now }, tx);
      return { userId: account.id, email: account.email, name: account.name, ownershipProven, credentialEpoch: account.credentialEpoch };
    });
  }

  /**
   * Uses a verification link: the address it was mailed to, still the account's, is verified, the
   * account's other verification links used up, audited. The account, or undefined for a link that
   * no longer works.
   */
  redeemVerification(tokenHash: Buffer, now: Date, ip: string | null): Promise<LinkAccount | undefined> {
    return this.uow.run(async (tx) => {
      const used = await this.links.use(tx, 'email_verification', tokenHash, now);
      const account = used && (await this.users.markEmailVerified(tx, used.userId, now));
      if (!used || !account) return undefined;
      await this.links.useUpOtherVerifications(tx, used.userId, tokenHash, now);
      await this.audit.record('email.verify', { userId: account.id, ip, at: now }, tx);
      return { userId: account.id, email: account.email, name: account.name };
    });
  }
}
