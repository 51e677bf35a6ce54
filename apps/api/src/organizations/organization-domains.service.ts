import { Injectable } from '@nestjs/common';
import {
  DOMAIN_VERIFICATION_PREFIX,
  type JoinableOrganization,
  type JoinOrganizationResponse,
  type JoinRequest,
  type OrganizationDomain,
  roleAtLeast,
  type UpdateDomainRequest,
} from '@prospect/contract';
import { AuditService } from '../audit/audit.service.js';
import { conflict, forbidden, notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { generateSecret } from '../common/secrets.js';
import { isUniqueViolation } from '../database/sql.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { DomainTxtLookup, type TxtAnswer } from './domain-txt-lookup.js';
import { type DomainRow, OrganizationDomainsRepository } from './organization-domains.repository.js';
import { OrganizationJoinRequestsRepository } from './organization-join-requests.repository.js';
import { OrganizationsRepository } from './organizations.repository.js';
import { needsRole, type OrgActor, OrganizationsService } from './organizations.service.js';

/** The most domains one organization may claim, verified or not. */
export const MAX_DOMAINS_PER_ORGANIZATION = 50;
/** How many of the TXT values a refused verification quotes back, and how much of each. */
const QUOTED_VALUES = 10;
const QUOTED_LENGTH = 120;

export const verificationRecordOf = (token: string) => `${DOMAIN_VERIFICATION_PREFIX}${token}`;

function toDomain(row: DomainRow): OrganizationDomain {
  return {
    domain: row.domain,
    verificationRecord: verificationRecordOf(row.verificationToken),
    verified: row.verifiedAt !== null,
    verifiedAt: row.verifiedAt?.toISOString() ?? null,
    joinPolicy: row.joinPolicy,
    enforceSso: row.enforceSso,
  };
}

/** What the resolver found, in words, for a refused verification. */
function whatWasFound(domain: string, answer: TxtAnswer): string {
  if (answer.kind === 'nxdomain') return `${domain} does not exist in DNS (NXDOMAIN)`;
  if (answer.kind === 'none' || answer.values.length === 0) return `${domain} has no TXT records`;
  const quoted = answer.values.slice(0, QUOTED_VALUES).map((v) => JSON.stringify(v.length > QUOTED_LENGTH ? `${v.slice(0, QUOTED_LENGTH)}…` : v));
  const more = answer.values.length > QUOTED_VALUES ? ` and ${answer.values.length - QUOTED_VALUES} more` : '';
  return `the TXT records of ${domain} are ${quoted.join(', ')}${more}`;
}

/**
 * Verified domains of an organization (issue #44): an admin claims a domain, publishes the TXT
 * record `prospect-verification=<token>` on it, and asks for the check; a verified domain lets
 * people with a verified address in it join (`joinPolicy`) and may be enforced to sign in through
 * the organization's identity provider. A domain is verified by at most one organization: the
 * partial unique index `organization_domains_verified_domain` decides, whatever runs at once.
 *
 * Every change (and every join) runs under the organization row's lock with the actor's role read
 * under it, as OrganizationsService's member changes do, so a join and a policy change, or a
 * demotion and a domain change, happen one after the other. The DNS lookup runs before any
 * transaction: no lock is held while a name server is slow.
 */
@Injectable()
export class OrganizationDomainsService {
  constructor(
    private readonly domains: OrganizationDomainsRepository,
    private readonly joinRequests: OrganizationJoinRequestsRepository,
    private readonly orgs: OrganizationsRepository,
    private readonly organizations: OrganizationsService,
    private readonly lookup: DomainTxtLookup,
    private readonly rateLimits: RateLimits,
    private readonly audit: AuditService,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
  ) {}

  async list(actor: OrgActor): Promise<OrganizationDomain[]> {
    return (await this.domains.list(actor.organization.id)).map(toDomain);
  }

  /** Claims `domain`, unverified, with a new token. @throws 409 when another organization verified it, or this one has it already. */
  async add(actor: OrgActor, domain: string): Promise<OrganizationDomain> {
    return this.asAdmin(actor, 'add domains', async (tx, actor) => {
      const orgId = actor.organization.id;
      if ((await this.domains.count(orgId, tx)) >= MAX_DOMAINS_PER_ORGANIZATION) {
        throw conflict(`“${actor.organization.name}” has ${MAX_DOMAINS_PER_ORGANIZATION} domains already, the most it may have: remove one first.`);
      }
      const row = await this.domains.insert(tx, orgId, domain, generateSecret(''), this.clock.now());
      if (!row) {
        if (await this.domains.find(orgId, domain, tx)) throw conflict(`“${actor.organization.name}” has added ${domain} already.`);
        throw conflict(`Another organization has verified ${domain}: a domain belongs to one organization only.`);
      }
      await this.organizations.record(tx, actor, 'org.domain_add', { domain });
      return toDomain(row);
    });
  }

  /**
   * Looks for the domain's TXT record and marks it verified when it is there. Counted against the
   * organization's verifications of the hour before the lookup. @throws 409 saying what the
   * resolver found when the record is not among the domain's TXT records, or when another
   * organization verified the domain first; 503 when the resolver could not answer.
   */
  async verify(actor: OrgActor, domain: string): Promise<OrganizationDomain> {
    const orgId = actor.organization.id;
    const claim = await this.domains.find(orgId, domain);
    if (!claim) throw this.noSuchDomain(actor, domain);
    if (claim.verifiedAt) return toDomain(claim);
    await this.rateLimits.attemptDomainVerification(orgId);
    const taken = `Another organization has verified ${domain} first: a domain belongs to one organization only.`;
    // Spares the name servers a query whose answer cannot help; the index below still decides.
    if (await this.domains.verifiedElsewhere(orgId, domain)) throw conflict(taken);
    const expected = verificationRecordOf(claim.verificationToken);
    const answer = await this.lookup.txt(domain);
    if (answer.kind !== 'records' || !answer.values.some((value) => value.trim() === expected)) {
      throw conflict(`${domain} is not verified: ${whatWasFound(domain, answer)}. Add a TXT record on ${domain} itself with the value ${expected}, then try again (a new record can take a while to reach every DNS server).`);
    }
    try {
      return await this.asAdmin(actor, 'verify domains', async (tx, actor) => {
        const verified = await this.domains.markVerified(tx, orgId, domain, claim.verificationToken, this.clock.now());
        if (!verified) {
          // Removed meanwhile, or verified by a request of this organization that ran first.
          const now = await this.domains.find(orgId, domain, tx);
          if (!now) throw this.noSuchDomain(actor, domain);
          return toDomain(now);
        }
        await this.organizations.record(tx, actor, 'org.domain_verify', { domain });
        return toDomain(verified);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(taken);
      throw err;
    }
  }

  /**
   * Sets the join policy, and whether people of the domain must sign in through the organization's
   * identity provider. @throws 409 when enforcing a domain not verified, or for an organization
   * without an enabled identity provider of its own.
   */
  async update(actor: OrgActor, domain: string, changes: UpdateDomainRequest): Promise<OrganizationDomain> {
    return this.asAdmin(actor, 'change domains', async (tx, actor) => {
      const orgId = actor.organization.id;
      const row = await this.domains.find(orgId, domain, tx);
      if (!row) throw this.noSuchDomain(actor, domain);
      if (changes.enforceSso === true && !row.enforceSso) {
        if (!row.verifiedAt) throw conflict(`Verify ${domain} before enforcing sign-in through your identity provider for it.`);
        // The check hook for federation/: an organization enforces only a provider of its own that is enabled.
        if (!(await this.domains.hasEnabledIdentityProvider(orgId, tx))) {
          throw conflict(`“${actor.organization.name}” has no enabled identity provider of its own: add and enable one before enforcing sign-in through it for ${domain}.`);
        }
      }
      const updated = (await this.domains.update(tx, orgId, domain, changes.joinPolicy ?? null, changes.enforceSso ?? null))!;
      const detail: Record<string, string | boolean> = { domain };
      if (changes.joinPolicy !== undefined && changes.joinPolicy !== row.joinPolicy) detail.joinPolicy = changes.joinPolicy;
      if (changes.enforceSso !== undefined && changes.enforceSso !== row.enforceSso) detail.enforceSso = changes.enforceSso;
      if (Object.keys(detail).length > 1) await this.organizations.record(tx, actor, 'org.domain_update', detail);
      return toDomain(updated);
    });
  }

  /** Removes the domain: it no longer lets anyone join, nor enforces anything; members who joined through it stay. */
  async remove(actor: OrgActor, domain: string): Promise<void> {
    await this.asAdmin(actor, 'remove domains', async (tx, actor) => {
      const removed = await this.domains.remove(tx, actor.organization.id, domain);
      if (!removed) throw this.noSuchDomain(actor, domain);
      await this.organizations.record(tx, actor, 'org.domain_remove', { domain, wasVerified: removed.verifiedAt !== null });
    });
  }

  /** The organizations the person may join or ask to join through the verified domain of their verified address. */
  joinable(userId: string): Promise<JoinableOrganization[]> {
    return this.domains.joinableFor(userId);
  }

  /**
   * The person joins the organization of `slug` through its verified domain their verified address
   * is in: at once (`auto`), or by a request an admin approves (`request`). The address is read
   * now, under the organization's lock: someone whose address has left the domain cannot join,
   * though members whose address changed stay (removing them is the admins' call).
   * @throws 403 for an address not verified, or a domain joined by invitation only; 404 when there
   * is no such organization or none of its verified domains is the address's (alike, so slugs
   * cannot be probed).
   */
  async join(slug: string, userId: string, ip: string | null): Promise<JoinOrganizationResponse> {
    return this.uow.run(async (tx) => {
      const first = await this.domains.joinTarget(slug, userId, tx);
      if (!first) throw notFound('Your account no longer exists.');
      if (!first.emailVerified) throw forbidden(`Confirm your e-mail address (${first.email}) first: only a verified address lets you join an organization through its domain.`);
      // Only someone the organization's domains let in (or a member) takes its lock: anyone else cannot make joins wait.
      if (!first.organizationId || (!first.domain && !first.member)) throw this.cannotJoin(slug, first.email);
      if (!(await this.orgs.lock(tx, first.organizationId))) throw this.cannotJoin(slug, first.email);
      // Read again under the lock: a policy change or a removal that committed meanwhile counts.
      const target = (await this.domains.joinTarget(slug, userId, tx))!;
      const { organizationId, name } = target as { organizationId: string; name: string };
      if (target.member) {
        const role = (await this.orgs.roleOf(tx, organizationId, userId)) ?? null;
        return { status: 'member', slug, name, role };
      }
      if (!target.domain) throw this.cannotJoin(slug, target.email);
      if (target.joinPolicy === 'invite') {
        throw forbidden(`“${name}” takes people of ${target.domain} by invitation only: ask one of its admins to invite you.`);
      }
      if (target.joinPolicy === 'auto') {
        await this.organizations.addMember(tx, organizationId, userId, 'member', `domain:${target.domain}`, ip);
        await this.joinRequests.remove(tx, organizationId, userId);
        return { status: 'member', slug, name, role: 'member' };
      }
      if (await this.joinRequests.insert(tx, organizationId, userId, this.clock.now())) {
        await this.audit.record('org.join_request', { userId, ip, organizationId, detail: { domain: target.domain } }, tx);
      }
      return { status: 'requested', slug, name, role: null };
    });
  }

  async listJoinRequests(actor: OrgActor): Promise<JoinRequest[]> {
    return (await this.joinRequests.list(actor.organization.id)).map((r) => ({
      user: { id: r.userId, email: r.email, name: r.name },
      requestedAt: r.requestedAt.toISOString(),
    }));
  }

  /**
   * An admin approves a request: the person becomes a member, if their address is still verified
   * and in a verified domain of the organization (then, or else, the request ends). @throws 404
   * when there is no such request; 409 when the person may no longer join.
   */
  async approve(actor: OrgActor, userId: string): Promise<void> {
    const outcome = await this.asAdmin(actor, 'approve requests to join', async (tx, actor) => {
      const orgId = actor.organization.id;
      if (!(await this.joinRequests.remove(tx, orgId, userId))) throw this.noSuchRequest(actor, userId);
      const target = await this.domains.joinTarget(actor.organization.slug, userId, tx);
      if (!target?.emailVerified || !target.domain) {
        await this.organizations.record(tx, actor, 'org.join_request_decline', { memberId: userId, reason: 'address_outside_verified_domains' });
        return 'ended' as const;
      }
      await this.organizations.addMember(tx, orgId, userId, 'member', 'join_request', actor.ip);
      await this.organizations.record(tx, actor, 'org.join_request_approve', { memberId: userId, domain: target.domain });
      return 'added' as const;
    });
    if (outcome === 'ended') {
      throw conflict(`This person’s address is no longer a verified one in a verified domain of “${actor.organization.name}”: their request has ended. Invite them if they should join.`);
    }
  }

  async decline(actor: OrgActor, userId: string): Promise<void> {
    await this.asAdmin(actor, 'decline requests to join', async (tx, actor) => {
      if (!(await this.joinRequests.remove(tx, actor.organization.id, userId))) throw this.noSuchRequest(actor, userId);
      await this.organizations.record(tx, actor, 'org.join_request_decline', { memberId: userId });
    });
  }

  /** Runs `work` under the organization row's lock, as an admin or owner by their role read under it. */
  private asAdmin<T>(actor: OrgActor, what: string, work: (tx: Tx, actor: OrgActor) => Promise<T>): Promise<T> {
    return this.uow.run(async (tx) => {
      if (!(await this.orgs.lock(tx, actor.organization.id))) throw notFound('This organization no longer exists.');
      const role = await this.orgs.roleOf(tx, actor.organization.id, actor.userId);
      if (!role) throw notFound('This organization no longer exists, or you are no longer a member.');
      const now = { ...actor, organization: { ...actor.organization, role } };
      if (!roleAtLeast(role, 'admin')) needsRole('admin', now, what);
      return work(tx, now);
    });
  }

  private noSuchDomain(actor: OrgActor, domain: string) {
    return notFound(`“${actor.organization.name}” has no domain ${domain}.`);
  }

  private noSuchRequest(actor: OrgActor, userId: string) {
    return notFound(`No request to join “${actor.organization.name}” from the person with the id ${userId}.`);
  }

  private cannotJoin(slug: string, email: string) {
    const domain = email.slice(email.lastIndexOf('@') + 1);
    return notFound(`No organization “${slug}” takes people of ${domain}: ask one of its admins for an invitation.`);
  }
}
