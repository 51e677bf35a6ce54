import { Injectable } from '@nestjs/common';
import { ORG_INVITATION_DAYS, type OrganizationInvitation, type OrgRole, roleAtLeast } from '@prospect/contract';
import { AuditService } from '../audit/audit.service.js';
import { notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { composeMail, Mailer } from '../mail/mailer.js';
import { RateLimits, TooManyRequests } from '../rate-limits/rate-limits.js';
import type { User } from '../users/user.entity.js';
import { normalizeEmail, UsersService } from '../users/users.service.js';
import { type InvitationRow, type LinkedInvitationRow, OrganizationInvitationsRepository } from './organization-invitations.repository.js';
import { OrganizationsRepository } from './organizations.repository.js';
import { needsRole, type OrgActor, OrganizationsService } from './organizations.service.js';

/** Prefix of an organization invitation's token (256 random bits); the admin's account invitation is `prsi_`. */
export const ORG_INVITATION_TOKEN_PREFIX = 'prso_';
/** The page the mailed link opens, with `?token=` (a query, not a path: request logs keep paths, never queries). */
export const ORG_INVITATION_PAGE = '/invitations';

/**
 * Why a link no longer works: `unknown` (never issued, or its organization deleted), `expired`,
 * `revoked` (by an admin, or replaced by a newer invitation of the address), `used` (accepted
 * once), `inviter` (the inviter is no longer an admin of the organization, no longer an owner for
 * an owner's invitation, or changed their password or address since: the credential-state rule).
 */
export type InvitationEnd = 'unknown' | 'expired' | 'revoked' | 'used' | 'inviter';

/** The link no longer works (why: `end`). */
export class InvitationUnusable extends Error {
  constructor(readonly end: InvitationEnd) {
    super(`invitation ${end}`);
  }
}

/**
 * The signed-in person may not accept it: their address is another (`other-address`), or is the
 * invited one but not verified (`unverified`). `invitedEmail` is the address it was sent to.
 */
export class InvitationNotForYou extends Error {
  constructor(
    readonly reason: 'other-address' | 'unverified',
    readonly invitedEmail: string,
  ) {
    super(`invitation not for this account (${reason})`);
  }
}

/** An invitation as its link's page shows it. */
export interface InvitationPreview {
  email: string;
  role: OrgRole;
  expiresAt: Date;
  organization: { slug: string; name: string };
  inviterName: string | null;
}

/** What accepting did. */
export interface Acceptance {
  organization: { slug: string; name: string };
  role: OrgRole;
  /** False when the person was a member already (their role is left as it was). */
  added: boolean;
}

const toInvitation = (row: InvitationRow): OrganizationInvitation => ({ id: row.id, email: row.email, role: row.role, expiresAt: row.expiresAt.toISOString() });

/**
 * Invitations to an organization by address (issue #44): made by its admins (an owner's role only
 * by an owner), mailed through the outbox in the transaction that makes them, single use, for
 * ORG_INVITATION_DAYS, revocable, a newer one to an address replacing the open one. Bound to the
 * address: only an account whose verified address is the invited one accepts it. Bound to the
 * inviter's state: it ends when they are no longer an admin (an owner, for an owner's invitation)
 * of the organization, or their credential epoch moved on.
 *
 * Lock order: the organization's row, then the invitation's: the order every change of an
 * organization takes (deleting it cascades to its invitations under its lock), so no accept, re-invite
 * or deletion running at the same time can deadlock with another.
 */
@Injectable()
export class OrganizationInvitationsService {
  constructor(
    private readonly invitations: OrganizationInvitationsRepository,
    private readonly orgs: OrganizationsRepository,
    private readonly organizations: OrganizationsService,
    private readonly users: UsersService,
    private readonly uow: UnitOfWork,
    private readonly mailer: Mailer,
    private readonly limits: RateLimits,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly audit: AuditService,
  ) {}

  /**
   * Invites `email` with `role` and mails the link, in one transaction (the mail goes only if the
   * invitation is made). Counted against the organization's hourly limit and the recipient's
   * before anything is made.
   * @throws 403 (needsRole) for an admin inviting an owner; 429 over a limit.
   */
  async create(actor: OrgActor, input: { email: string; role: OrgRole }): Promise<OrganizationInvitation> {
    const email = normalizeEmail(input.email);
    if (!roleAtLeast(actor.organization.role, 'admin')) needsRole('admin', actor, 'invite people');
    if (input.role === 'owner' && actor.organization.role !== 'owner') needsRole('owner', actor, 'invite an owner');
    await this.limits.sendOrganizationInvitation(actor.organization.id);
    if (!(await this.limits.mailToRecipient(email))) {
      await this.limits.organizationInvitationNotSent(actor.organization.id);
      throw new TooManyRequests(`${email} has been sent too many mails in the last hour: please invite them later.`, 3600);
    }
    const token = generateSecret(ORG_INVITATION_TOKEN_PREFIX);
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + ORG_INVITATION_DAYS * 86_400_000);
    try {
      return await this.uow.run(async (tx) => {
        // Under the organization's lock, with the inviter's role as it is now (demoted a moment ago: refused).
        const role = await this.lockedRole(tx, actor);
        const inviter = { ...actor, organization: { ...actor.organization, role } };
        if (!roleAtLeast(role, 'admin')) needsRole('admin', inviter, 'invite people');
        if (input.role === 'owner' && role !== 'owner') needsRole('owner', inviter, 'invite an owner');
        const replaced = await this.invitations.revokeOpenTo(tx, actor.organization.id, email, now);
        const row = await this.invitations.insert(tx, { organizationId: actor.organization.id, email, role: input.role, tokenHash: sha256(token), inviterId: actor.userId, now, expiresAt });
        await this.organizations.record(tx, inviter, 'org.invitation_create', { invitationId: row.id, email, role: input.role, replaced: replaced.length });
        await this.mailer.send(this.invitationMail(email, input.role, actor, token), tx);
        return toInvitation(row);
      });
    } catch (err) {
      await this.limits.organizationInvitationNotSent(actor.organization.id);
      throw err;
    }
  }

  /** The organization's open invitations, newest first. */
  async list(organizationId: string): Promise<OrganizationInvitation[]> {
    return (await this.invitations.listOpen(organizationId, this.clock.now())).map(toInvitation);
  }

  /** Revokes an open invitation: its link stops working at once. @throws 404 when there is no such open one. */
  async revoke(actor: OrgActor, id: string): Promise<void> {
    const now = this.clock.now();
    await this.uow.run(async (tx) => {
      const role = await this.lockedRole(tx, actor);
      const revoker = { ...actor, organization: { ...actor.organization, role } };
      if (!roleAtLeast(role, 'admin')) needsRole('admin', revoker, 'revoke invitations');
      const row = await this.invitations.revoke(tx, actor.organization.id, id, now);
      if (!row) throw notFound(`No open invitation with the id ${id} in “${actor.organization.name}”.`);
      await this.organizations.record(tx, revoker, 'org.invitation_revoke', { invitationId: id, email: row.email, role: row.role });
    });
  }

  /** What the link's page shows. @throws InvitationUnusable. */
  async preview(token: string): Promise<InvitationPreview> {
    if (!looksLikeSecret(token, ORG_INVITATION_TOKEN_PREFIX)) throw new InvitationUnusable('unknown');
    const row = await this.invitations.findByHash(sha256(token));
    this.checkUsable(row);
    return previewOf(row);
  }

  /**
   * Accepts as the signed-in `userId`, in one transaction under the organization's lock and the
   * invitation's: the invitation still usable (a second accept, racing or not, finds it used), the
   * person's address the invited one and verified, as both are in this transaction; then they are
   * a member with its role, the invitation used, both recorded.
   * @throws InvitationUnusable; InvitationNotForYou.
   */
  async accept(token: string, userId: string, ip: string | null): Promise<Acceptance> {
    return this.underLocks(token, async (tx, row) => {
      const accepter = await this.invitations.accepter(tx, userId);
      if (!accepter || normalizeEmail(accepter.email) !== row.email) throw new InvitationNotForYou('other-address', row.email);
      if (!accepter.emailVerified) throw new InvitationNotForYou('unverified', row.email);
      return this.join(tx, row, userId, ip);
    });
  }

  /**
   * A new account for the invited address, made from the link and joined at once: the link proves
   * the address (only its mailbox got it), so it is verified, as the admin's invitation does. One
   * transaction: no account without the membership, and no second account from a used link.
   * @throws InvitationUnusable; 409 (ApiException) when the address has an account.
   */
  async signUpAndAccept(token: string, input: { name: string; password: string }, ip: string | null): Promise<Acceptance & { user: User }> {
    return this.underLocks(token, async (tx, row) => {
      const user = await this.users.create({ email: row.email, name: input.name, password: input.password, emailVerified: true }, tx);
      await this.audit.record('web.signup', { userId: user.id, ip, detail: { via: 'organization invitation' } }, tx);
      return { ...(await this.join(tx, row, user.id, ip)), user };
    });
  }

  private async join(tx: Tx, row: LinkedInvitationRow, userId: string, ip: string | null): Promise<Acceptance> {
    const added = await this.organizations.addMember(tx, row.organizationId, userId, row.role, 'invitation', ip);
    await this.invitations.markAccepted(tx, row.id, this.clock.now());
    await this.organizations.record(tx, { userId, ip, organization: { id: row.organizationId, slug: row.organizationSlug, name: row.organizationName, role: row.role } }, 'org.invitation_accept', {
      invitationId: row.id,
      email: row.email,
      role: row.role,
      added,
    });
    return { organization: { slug: row.organizationSlug, name: row.organizationName }, role: row.role, added };
  }

  /** Runs `work` with the link's invitation locked, after its organization's row, once it is known to be usable under those locks. */
  private async underLocks<T>(token: string, work: (tx: Tx, row: LinkedInvitationRow) => Promise<T>): Promise<T> {
    if (!looksLikeSecret(token, ORG_INVITATION_TOKEN_PREFIX)) throw new InvitationUnusable('unknown');
    const hash = sha256(token);
    return this.uow.run(async (tx) => {
      const seen = await this.invitations.findByHash(hash, tx);
      if (!seen || !(await this.orgs.lock(tx, seen.organizationId))) throw new InvitationUnusable('unknown');
      const row = await this.invitations.lockByHash(tx, hash);
      this.checkUsable(row);
      return work(tx, row);
    });
  }

  /** @throws InvitationUnusable unless the invitation is open and its inviter's state is the one it was made under. */
  private checkUsable(row: LinkedInvitationRow | undefined): asserts row is LinkedInvitationRow {
    if (!row) throw new InvitationUnusable('unknown');
    if (row.acceptedAt) throw new InvitationUnusable('used');
    if (row.revokedAt) throw new InvitationUnusable('revoked');
    if (row.expiresAt.getTime() <= this.clock.now().getTime()) throw new InvitationUnusable('expired');
    const inviterMay = row.inviterRole !== null && roleAtLeast(row.inviterRole, row.role === 'owner' ? 'owner' : 'admin');
    if (!inviterMay || !row.inviterUnchanged) throw new InvitationUnusable('inviter');
  }

  /** The inviter's role under the organization's lock, taken for the rest of `tx`. @throws 404 when it or their membership is gone. */
  private async lockedRole(tx: Tx, actor: OrgActor): Promise<OrgRole> {
    if (!(await this.orgs.lock(tx, actor.organization.id))) throw notFound('This organization no longer exists.');
    const role = await this.orgs.roleOf(tx, actor.organization.id, actor.userId);
    if (!role) throw notFound('This organization no longer exists, or you are no longer a member.');
    return role;
  }

  private invitationMail(email: string, role: OrgRole, actor: OrgActor, token: string) {
    const org = actor.organization.name;
    return composeMail(email, `You are invited to join ${org} on Prospect`, {
      paragraphs: [
        'Hello,',
        `You are invited to join “${org}” on Prospect at ${this.config.publicUrl} as ${role === 'admin' ? 'an admin' : `a ${role}`}. Open the link to accept it with your account for ${email}, or to create one: it works once, for ${ORG_INVITATION_DAYS} days.`,
      ],
      link: { url: `${this.config.publicUrl}${ORG_INVITATION_PAGE}?token=${token}`, label: `Join ${org}` },
      footer: 'If you did not expect this, ignore this mail: nothing happens unless you accept.',
    });
  }
}

const previewOf = (row: LinkedInvitationRow): InvitationPreview => ({
  email: row.email,
  role: row.role,
  expiresAt: row.expiresAt,
  organization: { slug: row.organizationSlug, name: row.organizationName },
  inviterName: row.inviterName,
});
