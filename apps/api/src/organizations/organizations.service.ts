import { Injectable } from '@nestjs/common';
import { type Organization, type OrganizationMember, type OrgRole, roleAtLeast } from '@prospect/contract';
import { AuditService } from '../audit/audit.service.js';
import type { AuthPrincipal } from '../auth/auth-principal.js';
import { inSudoMode } from '../auth/sudo-rule.js';
import { AppConfig } from '../config/app-config.js';
import { conflict, forbidden, notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import type { Tx } from '../database/tx.js';
import { OrganizationTeardown } from './organization-teardown.js';
import { OrganizationDomainsRepository } from './organization-domains.repository.js';
import { type MembershipRow, OrganizationsRepository } from './organizations.repository.js';

/** The account is the only owner of organizations that have other members: they need another owner first. */
export class SoleOwnerError extends Error {
  constructor(readonly organizations: ReadonlyArray<{ slug: string; name: string }>) {
    super(`the only owner of ${organizations.map((o) => o.slug).join(', ')}`);
  }
}

/** Who acts in an organization: a member, with their role there, read at this request. */
export interface OrgActor {
  userId: string;
  ip: string | null;
  /** Their User-Agent, for the events of what they do (issue #46). */
  userAgent?: string | null;
  /** Their organization, as the membership guard found it for this request. */
  organization: MembershipRow;
}

/** Where the pages of organizations are (web/orgs/). */
export const ORG_PAGE_PREFIX = '/orgs';

const words = (role: OrgRole) => (role === 'admin' ? 'an admin' : `a ${role}`);

/** The 403 a role gets for what a higher role may do: it names the role needed. */
export function needsRole(needed: OrgRole, actor: OrgActor, what: string): never {
  throw forbidden(`Only ${needed === 'admin' ? 'an admin or an owner' : 'an owner'} of “${actor.organization.name}” may ${what}; you are ${words(actor.organization.role)}.`);
}

/**
 * The rules of organizations and their members (issue #44). Every change of roles or members runs
 * under the organization row's lock (OrganizationsRepository.lock), so the last-owner rule holds
 * whatever runs at the same time; every change is recorded in the organization's log.
 */
@Injectable()
export class OrganizationsService {
  constructor(
    private readonly orgs: OrganizationsRepository,
    private readonly uow: UnitOfWork,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly teardown: OrganizationTeardown,
    private readonly config: AppConfig,
    private readonly domains: OrganizationDomainsRepository,
  ) {}

  /** The organization's verified domains: the only addresses its identity providers may sign in. */
  verifiedDomains(organizationId: string, tx?: Tx): Promise<string[]> {
    return this.domains.verifiedDomains(organizationId, tx);
  }

  /** The organization that verified the domain of an address, and whether it enforces its provider there; undefined when none did. */
  domainOwner(domain: string) {
    return this.domains.verifiedOwner(domain.toLowerCase());
  }

  /** The organization of `slug` (its id, slug and name), for public endpoints named by slug (a SAML connection's, issue #47). */
  bySlug(slug: string): Promise<{ id: string; slug: string; name: string } | undefined> {
    return this.orgs.bySlug(slug);
  }

  /** These organizations' slugs and names, by id (for the instance's admin pages, which name the organization a provider belongs to). */
  async namesOf(ids: readonly string[]): Promise<Map<string, { slug: string; name: string }>> {
    if (!ids.length) return new Map();
    return new Map((await this.orgs.namesOf([...new Set(ids)])).map((o) => [o.id, { slug: o.slug, name: o.name }]));
  }

  /** A new organization, its creator its owner. @throws 409 when the slug is taken. */
  async create(userId: string, input: { name: string; slug: string }, ip: string | null): Promise<Organization> {
    const now = this.clock.now();
    return this.uow.run(async (tx) => {
      const org = await this.orgs.insertWithOwner(input.slug, input.name, userId, now, tx);
      if (!org) throw conflict(`The address “${input.slug}” is taken by another organization: choose another slug.`);
      await this.audit.record('org.create', { userId, ip, organizationId: org.id, detail: { slug: org.slug }, at: now }, tx);
      return { ...org, role: 'owner' as const };
    });
  }

  /**
   * The person's organizations, with their role in each, read now (never cached: a removal counts at
   * the next request), as a credential issued at `issuedAt` acts for them (a token's grant's
   * approval, a browser session's sign-in): not those they left at or after it, even when a member
   * again (issue #47).
   */
  listFor(userId: string, issuedAt: Date | null): Promise<Organization[]> {
    return this.orgs.listForUser(userId, issuedAt);
  }

  /**
   * The organization of `slug` as `userId` sees it with a credential issued at `issuedAt`; undefined
   * when it does not exist, they are not a member, or they left it at or after `issuedAt` (all alike).
   */
  async membership(slug: string, userId: string, issuedAt: Date | null): Promise<MembershipRow | undefined> {
    const found = await this.orgs.membership(slug, userId, issuedAt);
    return found && !found.predatesDeparture ? found.organization : undefined;
  }

  /**
   * As `membership`, telling the last case apart: `predatesDeparture` for a member again whose
   * credential was issued at or before their last departure. A browser says to sign in again
   * (web/orgs); to a token it is the same 404 as for a non-member.
   */
  membershipAsOf(slug: string, userId: string, issuedAt: Date): Promise<{ organization: MembershipRow; predatesDeparture: boolean } | undefined> {
    return this.orgs.membership(slug, userId, issuedAt);
  }

  async rename(actor: OrgActor, name: string): Promise<Organization> {
    if (!roleAtLeast(actor.organization.role, 'admin')) needsRole('admin', actor, 'rename it');
    await this.uow.run(async (tx) => {
      await this.orgs.rename(tx, actor.organization.id, name);
      await this.record(tx, actor, 'org.rename', { name });
    });
    return { ...actor.organization, name };
  }

  /**
   * Deletes it and everything it owns: an owner, re-confirmed (sudo mode), which only a signed-in
   * browser can be; a bearer token is sent to the organization's page, which asks.
   */
  async delete(actor: OrgActor, caller: Pick<AuthPrincipal, 'via' | 'confirmedAt'>): Promise<void> {
    if (caller.via !== 'web-session' || !inSudoMode(caller.confirmedAt, this.clock, this.config)) {
      throw forbidden(`Deleting “${actor.organization.name}” asks you to confirm who you are: delete it on its page, ${ORG_PAGE_PREFIX}/${actor.organization.slug}.`);
    }
    const now = this.clock.now();
    await this.underLock(actor, async (tx, actor) => {
      if (actor.organization.role !== 'owner') needsRole('owner', actor, 'delete it');
      await this.teardown.run(tx, actor.organization.id, now);
      await this.orgs.delete(tx, actor.organization.id);
      await this.record(tx, actor, 'org.delete', { slug: actor.organization.slug });
    });
  }

  async listMembers(organizationId: string): Promise<OrganizationMember[]> {
    return (await this.orgs.listMembers(organizationId)).map((m) => ({
      user: { id: m.userId, email: m.email, name: m.name },
      role: m.role,
      joinedAt: m.joinedAt.toISOString(),
    }));
  }

  /**
   * Gives a member another role. An admin manages members and admins, never an owner nor the owner
   * role; the last owner cannot be demoted (409).
   */
  async changeRole(actor: OrgActor, userId: string, role: OrgRole): Promise<void> {
    await this.underLock(actor, async (tx, actor) => {
      if (!roleAtLeast(actor.organization.role, 'admin')) needsRole('admin', actor, 'change roles');
      if (role === 'owner' && actor.organization.role !== 'owner') needsRole('owner', actor, 'name owners');
      const current = await this.memberRole(tx, actor, userId);
      if (current === role) return;
      if (current === 'owner') {
        if (actor.organization.role !== 'owner') needsRole('owner', actor, 'change an owner’s role');
        if ((await this.orgs.countOwners(tx, actor.organization.id)) === 1) {
          throw conflict(`This is the last owner of “${actor.organization.name}”: name another owner first.`);
        }
      }
      await this.orgs.setRole(tx, actor.organization.id, userId, role);
      await this.record(tx, actor, 'org.member_role', { memberId: userId, from: current, to: role });
    });
  }

  /**
   * Removes a member, or lets one leave (their own id). An admin removes members and admins, an owner
   * anyone; the last owner can neither leave nor be removed (409).
   */
  async removeMember(actor: OrgActor, userId: string): Promise<void> {
    await this.underLock(actor, async (tx, actor) => {
      const leaving = userId === actor.userId;
      if (!leaving && !roleAtLeast(actor.organization.role, 'admin')) needsRole('admin', actor, 'remove members');
      const current = await this.memberRole(tx, actor, userId);
      if (current === 'owner') {
        if (!leaving && actor.organization.role !== 'owner') needsRole('owner', actor, 'remove an owner');
        if ((await this.orgs.countOwners(tx, actor.organization.id)) === 1) {
          throw conflict(
            leaving
              ? `You are the last owner of “${actor.organization.name}”: name another owner before you leave, or delete the organization.`
              : `This is the last owner of “${actor.organization.name}”: name another owner first.`,
          );
        }
      }
      await this.orgs.removeMember(tx, actor.organization.id, userId, this.clock.now());
      await this.record(tx, actor, leaving ? 'org.member_leave' : 'org.member_remove', { memberId: userId, role: current });
    });
  }

  /**
   * Adds a person as a member with `role`, in the caller's `tx` (an accepted invitation, a join
   * through a verified domain), recorded as `org.member_add`; false when they were a member already.
   */
  async addMember(tx: Tx, organizationId: string, userId: string, role: OrgRole, via: string, ip: string | null): Promise<boolean> {
    const now = this.clock.now();
    if (!(await this.orgs.lock(tx, organizationId))) throw notFound('This organization no longer exists.');
    const added = await this.orgs.addMember(tx, organizationId, userId, role, now);
    if (added) await this.audit.record('org.member_add', { userId, ip, organizationId, detail: { memberId: userId, role, via }, at: now }, tx);
    return added;
  }

  /**
   * Locks the organization's row for the rest of `tx`, as every change of its members does (a
   * directory's changes, scim/, take it before reading what they change). @throws 404 when it is gone.
   */
  async lockForChange(tx: Tx, organizationId: string): Promise<void> {
    if (!(await this.orgs.lock(tx, organizationId))) throw notFound('This organization no longer exists.');
  }

  /** The member's role, in `tx` (after lockForChange: as it stays until `tx` ends); undefined for a non-member. */
  roleIn(tx: Tx, organizationId: string, userId: string): Promise<OrgRole | undefined> {
    return this.orgs.roleOf(tx, organizationId, userId);
  }

  /**
   * Removes a member as the organization's directory asks (SCIM, issue #47), in `tx` after
   * lockForChange, recorded as `org.member_remove` by nobody with `via`. The last owner stays:
   * 'last-owner' (the caller refuses); 'not-member' when they were not one.
   */
  async removeMemberFor(tx: Tx, organizationId: string, userId: string, via: string): Promise<'removed' | 'last-owner' | 'not-member'> {
    const role = await this.orgs.roleOf(tx, organizationId, userId);
    if (!role) return 'not-member';
    if (role === 'owner' && (await this.orgs.countOwners(tx, organizationId)) === 1) return 'last-owner';
    const now = this.clock.now();
    await this.orgs.removeMember(tx, organizationId, userId, now);
    await this.audit.record('org.member_remove', { organizationId, detail: { memberId: userId, role, via }, at: now }, tx);
    return 'removed';
  }

  /**
   * Gives a member `role` as the organization's directory asks (its groups, SCIM), in `tx` after
   * lockForChange, recorded as `org.member_role` by nobody with `via`. Never an owner's role, and
   * never the owner role: owners are named by owners, by hand.
   */
  async setRoleFor(tx: Tx, organizationId: string, userId: string, role: Exclude<OrgRole, 'owner'>, via: string): Promise<boolean> {
    const current = await this.orgs.roleOf(tx, organizationId, userId);
    if (!current || current === 'owner' || current === role) return false;
    await this.orgs.setRole(tx, organizationId, userId, role);
    await this.audit.record('org.member_role', { organizationId, detail: { memberId: userId, from: current, to: role, via }, at: this.clock.now() }, tx);
    return true;
  }

  /** addMember in a transaction of its own. */
  addMemberNow(organizationId: string, userId: string, role: OrgRole, via: string, ip: string | null = null): Promise<boolean> {
    return this.uow.run((tx) => this.addMember(tx, organizationId, userId, role, via, ip));
  }

  /** The organizations this person is the only member of (what deleting their account leaves empty). */
  organizationsOfTheirOwn(userId: string): Promise<string[]> {
    return this.orgs.soleMemberships(userId);
  }

  /**
   * Deletes those of `organizationIds` that have no member left, with everything they own (their
   * only member's account was deleted: nobody would ever see them again, and their slugs come free).
   */
  async deleteIfMemberless(organizationIds: readonly string[]): Promise<void> {
    const now = this.clock.now();
    for (const organizationId of organizationIds) {
      await this.uow.run(async (tx) => {
        if (!(await this.orgs.lock(tx, organizationId)) || (await this.orgs.hasMembers(tx, organizationId))) return;
        await this.teardown.run(tx, organizationId, now);
        await this.orgs.delete(tx, organizationId);
        await this.audit.record('org.delete', { organizationId, detail: { reason: 'its only member’s account was deleted' }, at: now }, tx);
      });
    }
  }

  /** The organizations deleting this person's account would leave without an owner (with other members in them). */
  soleOwnerships(userId: string) {
    return this.orgs.soleOwnerships(userId);
  }

  /**
   * Before an account is deleted, in the deletion's `tx`: locks the organizations the person is a
   * member of (as every change of roles does) and refuses while they are the only owner of one with
   * other members, so an owner leaving at the same instant cannot leave an organization with none.
   * Otherwise records in each organization's log that the member goes with their account
   * (`org.member_remove`, reason `account deleted`, by nobody: the deletion's foreign keys remove
   * the membership itself), in the same `tx`, so the log and the members never disagree.
   * @throws SoleOwnerError
   */
  async checkAccountDeletion(tx: Tx, userId: string): Promise<void> {
    const memberships = await this.orgs.lockMembershipsOf(tx, userId);
    const soleOwned = await this.orgs.soleOwnerships(userId, tx);
    if (soleOwned.length) throw new SoleOwnerError(soleOwned);
    const at = this.clock.now();
    for (const { organizationId, role } of memberships) {
      // No user id: the deletion forgets the details of the person's own events, and this one is the organization's.
      await this.audit.record('org.member_remove', { organizationId, detail: { memberId: userId, role, reason: 'account deleted' }, at }, tx);
    }
  }

  /** The organization's log, newest first. */
  async log(organizationId: string, limit: number, offset: number) {
    return this.audit.listForOrganization(organizationId, limit, offset);
  }

  /** Records `type` in the organization's log, in `tx`, as done by `actor`. */
  record(tx: Tx, actor: OrgActor, type: Parameters<AuditService['record']>[0], detail: Record<string, string | number | boolean | null>): Promise<void> {
    return this.audit.record(type, { userId: actor.userId, ip: actor.ip, userAgent: actor.userAgent, organizationId: actor.organization.id, detail }, tx);
  }

  /**
   * Runs `work` under the organization row's lock, with the actor's role as it is under that lock:
   * one demoted or removed a moment ago, by a request that ran first, acts with what they have now.
   */
  private underLock(actor: OrgActor, work: (tx: Tx, actor: OrgActor) => Promise<void>): Promise<void> {
    return this.uow.run(async (tx) => {
      if (!(await this.orgs.lock(tx, actor.organization.id))) throw notFound('This organization no longer exists.');
      const role = await this.orgs.roleOf(tx, actor.organization.id, actor.userId);
      if (!role) throw notFound('This organization no longer exists, or you are no longer a member.');
      await work(tx, { ...actor, organization: { ...actor.organization, role } });
    });
  }

  private async memberRole(tx: Tx, actor: OrgActor, userId: string): Promise<OrgRole> {
    const role = await this.orgs.roleOf(tx, actor.organization.id, userId);
    if (!role) throw notFound(`No member with the id ${userId} in “${actor.organization.name}”.`);
    return role;
  }
}
