import { AppConfig } from '../config/app-config.js';
import { Injectable } from '@nestjs/common';
import { type AdminIdentityProvider, type CreateIdentityProviderRequest, presetIssuer, type UpdateIdentityProviderRequest } from '@prospect/contract';
import { AuditService } from '../audit/audit.service.js';
import { badRequest, conflict, notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { isUniqueViolation } from '../database/sql.js';
import { FederatedEndings } from './federated-endings.js';
import { FederatedIdentitiesRepository, type LinkForAdmin } from './federated-identities.repository.js';
import { FederationSignIn } from './federation-sign-in.service.js';
import { type IdentityProviderChanges, type IdentityProviderRow, IdentityProvidersRepository } from './identity-providers.repository.js';
import { issuerProblem, ProviderUnreachable, RelyingParty } from './relying-party.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { OrganizationTeardown } from '../organizations/organization-teardown.js';
import { OrganizationsService } from '../organizations/organizations.service.js';
import { RateLimits } from '../rate-limits/rate-limits.js';

/** The rows its methods answer, for the pages (which import services, never repositories). */
export type { IdentityProviderRow, LinkForAdmin };

/** The scopes asked for unless the admin says otherwise (and `offline_access` where the provider offers it: defaultScopes). */
export const DEFAULT_SCOPES = ['openid', 'email', 'profile'];

/**
 * DEFAULT_SCOPES, and `offline_access` when the provider's document lists it (Microsoft Entra ID,
 * Okta, Keycloak; not Google, which refuses it): its refresh token is what the leaver check asks
 * the provider with.
 */
function defaultScopes(metadata: Record<string, unknown>): string[] {
  const supported = Array.isArray(metadata.scopes_supported) ? metadata.scopes_supported : [];
  return supported.includes('offline_access') ? [...DEFAULT_SCOPES, 'offline_access'] : DEFAULT_SCOPES;
}
/** Ids that read as pages of their own in URLs and logs rather than providers. */
const RESERVED_IDS = new Set(['link', 'callback']);

/**
 * Whose providers a call is about: the instance's (administrators, `organizationId` null) or one
 * organization's (its admins, issue #44). An organization's provider may list only domains the
 * organization has verified, is found only through its organization (another's id is a 404), and
 * its changes go to the organization's log.
 */
export interface ProviderOwner {
  organizationId: string | null;
}
const INSTANCE: ProviderOwner = { organizationId: null };

/** What "Test connection" found: the provider's document read now, or the one sentence saying why it could not be. */
export type ConnectionTest =
  | { ok: true; issuer: string; authorizationEndpoint: string; tokenEndpoint: string; jwksUri: string; userinfoEndpoint: string | null; scopesSupported: string[] }
  | { ok: false; error: string };

/**
 * Identity providers as administrators configure them (the `/admin/identity-providers` page and
 * the JSON API use the same methods): each change one locked transaction with its audit event.
 */
@Injectable()
export class IdentityProvidersService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly providers: IdentityProvidersRepository,
    private readonly links: FederatedIdentitiesRepository,
    private readonly relyingParty: RelyingParty,
    private readonly federation: FederationSignIn,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly endings: FederatedEndings,
    private readonly organizations: OrganizationsService,
    private readonly limits: RateLimits,
    private readonly config: AppConfig,
    teardown: OrganizationTeardown,
  ) {
    // An organization's deletion (organizations/, below this module) ends its providers through us, in its transaction.
    teardown.attach((tx, organizationId, now) => this.endForOrganization(tx, organizationId, now));
    teardown.attachDomainEnding((tx, organizationId, domain) => this.endForOrganizationDomain(tx, organizationId, domain));
  }

  /** The instance's administrators see every provider; an organization, its own. */
  async list(owner: ProviderOwner = INSTANCE): Promise<AdminIdentityProvider[]> {
    const rows = await this.rowsOf(owner);
    const names = await this.organizations.namesOf(rows.flatMap((row) => (row.organizationId ? [row.organizationId] : [])));
    return rows.map((row) => this.toAdmin(row, row.linkedAccounts, names));
  }

  /** @throws ApiException 404 */
  async get(id: string, owner: ProviderOwner = INSTANCE): Promise<AdminIdentityProvider> {
    const found = (await this.rowsOf(owner)).find((row) => row.id === id);
    if (!found) throw notFound(`No identity provider with the id ${id}.`);
    return this.toAdmin(found, found.linkedAccounts, await this.organizations.namesOf(found.organizationId ? [found.organizationId] : []));
  }

  /**
   * "Test connection": the provider's discovery document read now (nothing stored), and what it
   * names, or the one sentence that says why it could not be read (RelyingParty.discover's, which
   * says nothing of what listens where on this server's network). An organization's test is
   * counted against its PROVIDER_DISCOVERIES_PER_HOUR before the issuer is asked.
   * @throws ApiException 404, 429
   */
  async testConnection(id: string, owner: ProviderOwner = INSTANCE): Promise<ConnectionTest> {
    const provider = await this.providers.findById(id);
    if (!provider || !ownedBy(provider, owner) || provider.protocol !== 'openid') throw notFound(`No identity provider with the id ${id}.`);
    if (owner.organizationId) await this.limits.attemptProviderDiscovery(owner.organizationId);
    try {
      const { metadata } = await this.relyingParty.discover(provider.issuer, provider.clientId, 'unused: the document alone is read');
      const text = (name: string) => (typeof metadata[name] === 'string' ? (metadata[name] as string) : null);
      return {
        ok: true,
        issuer: String(metadata.issuer),
        authorizationEndpoint: text('authorization_endpoint')!,
        tokenEndpoint: text('token_endpoint')!,
        jwksUri: text('jwks_uri')!,
        userinfoEndpoint: text('userinfo_endpoint'),
        scopesSupported: Array.isArray(metadata.scopes_supported) ? metadata.scopes_supported.filter((s): s is string => typeof s === 'string') : [],
      };
    } catch (err) {
      if (err instanceof ProviderUnreachable) return { ok: false, error: err.message };
      throw err;
    }
  }

  /**
   * Configures a provider: the issuer (from a preset, or given) is discovered, its client secret
   * sealed; disabled never, enforcing and making accounts only when asked.
   * @throws ApiException 400 (an issuer that is not https, or not an OpenID provider Prospect can
   *   use), 409 (the id or issuer is configured already, or a domain belongs to another provider).
   */
  async create(input: CreateIdentityProviderRequest, adminId: string, ip: string | null, owner: ProviderOwner = INSTANCE): Promise<AdminIdentityProvider> {
    if (RESERVED_IDS.has(input.id)) throw badRequest(`The id ${input.id} is a path of the sign-in pages: please choose another.`);
    if (owner.organizationId && input.enforce) throw badRequest(ENFORCE_BY_DOMAIN);
    const preset = input.preset ?? 'generic';
    const issuer = preset === 'generic' ? input.issuer!.trim() : presetIssuer(preset, input.tenant);
    const problem = issuerProblem(issuer);
    if (problem) throw badRequest(`The issuer ${problem}.`);
    const emailDomains = [...new Set(input.emailDomains)];
    if (await this.providers.findById(input.id)) throw conflict(`An identity provider with the id ${input.id} exists already.`);
    await this.refuseUnverifiedDomains(emailDomains, owner);
    await this.refuseClaimedDomains(emailDomains, null, undefined, owner);
    // Counted once the request is one that would be made, before the issuer is asked.
    if (owner.organizationId) await this.limits.attemptProviderDiscovery(owner.organizationId);
    let discovered;
    try {
      discovered = await this.relyingParty.discover(issuer, input.clientId, input.clientSecret);
    } catch (err) {
      if (err instanceof ProviderUnreachable) throw badRequest(err.message);
      throw err;
    }
    const now = this.clock.now();
    // As its document writes it (which discovery checked is the one asked for): the id_tokens' `iss`.
    const discoveredIssuer = String(discovered.metadata.issuer);
    const row: Omit<IdentityProviderRow, 'disabledAt' | 'updatedAt' | 'protocol'> = {
      id: input.id,
      displayName: input.displayName,
      issuer: discoveredIssuer,
      clientId: input.clientId,
      clientSecretSealed: await this.relyingParty.sealClientSecret(input.id, input.clientSecret),
      tokenEndpointAuthMethod: discovered.authMethod,
      scopes: (input.scopes ?? defaultScopes(discovered.metadata)).join(' '),
      emailDomains,
      enforce: input.enforce ?? false,
      allowSignUp: input.allowSignUp ?? false,
      mfaAcrValues: input.mfaAcrValues ?? [],
      metadata: discovered.metadata,
      discoveredAt: now,
      createdByUserId: adminId,
      createdAt: now,
      organizationId: owner.organizationId,
    };
    try {
      await this.uow.run(async (tx) => {
        await this.providers.insert(tx, row);
        const detail = { providerId: row.id, label: row.displayName, issuer: discoveredIssuer, emailDomains: emailDomains.join(' '), enforce: row.enforce, allowSignUp: row.allowSignUp };
        await this.record(tx, owner, 'create', adminId, ip, detail);
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`An identity provider with the id ${input.id} or the issuer ${discoveredIssuer} exists already.`);
      throw err;
    }
    return this.toAdmin({ ...row, protocol: 'openid', disabledAt: null, updatedAt: now }, 0, await this.organizations.namesOf(owner.organizationId ? [owner.organizationId] : []));
  }

  /**
   * Any of the changes, in one locked transaction, each audited. Disabling refuses its sign-ins
   * from now and ends every browser session started through it (the serializer refuses any
   * written back by a request in flight) and every grant those sessions approved (FederatedEndings);
   * enabling lets it sign people in again. `enforce` takes effect at once: password sign-in, reset
   * mail and passwords set by invitation stop for its domains (existing sessions stay; CLI and
   * extension grants end by their own rules). An organization's provider whose `emailDomains` lose
   * a domain ends the browser sessions it started for addresses of that domain, and the grants they
   * approved, as the domain's removal does (its `sessions` and `grants` in the update's event).
   * @returns the provider as it is now, and how many sessions ended.
   * @throws ApiException 404, 409 (a domain of another provider; an organization's provider, to the instance's administrators)
   */
  async update(
    id: string,
    changes: UpdateIdentityProviderRequest,
    adminId: string,
    ip: string | null,
    owner: ProviderOwner = INSTANCE,
  ): Promise<{ provider: AdminIdentityProvider; sessionsEnded: number }> {
    if (owner.organizationId && changes.enforce) throw badRequest(ENFORCE_BY_DOMAIN);
    await this.refuseOrganizationsProvider(id, owner);
    const emailDomains = changes.emailDomains ? [...new Set(changes.emailDomains)] : undefined;
    // Outside the transaction too: the organization's domains are read on another connection.
    if (emailDomains) await this.refuseUnverifiedDomains(emailDomains, owner);
    // Outside the transaction: nothing waits on the pool while it holds a connection (the embedded database has one backend).
    const clientSecretSealed = changes.clientSecret === undefined ? undefined : await this.relyingParty.sealClientSecret(id, changes.clientSecret);
    const { provider, sessionsEnded } = await this.uow.run(async (tx) => {
      const current = await this.existing(tx, id, owner);
      if (emailDomains) await this.refuseClaimedDomains(emailDomains, id, tx, owner);
      const now = this.clock.now();
      const settings: IdentityProviderChanges = {
        displayName: changes.displayName,
        clientId: changes.clientId,
        clientSecretSealed,
        scopes: changes.scopes?.join(' '),
        emailDomains,
        enforce: changes.enforce,
        allowSignUp: changes.allowSignUp,
        mfaAcrValues: changes.mfaAcrValues,
      };
      const changed = Object.entries(settings).filter(([, value]) => value !== undefined).map(([name]) => (name === 'clientSecretSealed' ? 'clientSecret' : name));
      let sessionsEnded = 0;
      let grantsEnded = 0;
      let disabledAt = current.disabledAt;
      if (changes.disabled === true && !current.disabledAt) disabledAt = now;
      if (changes.disabled === false) disabledAt = null;
      await this.providers.update(tx, id, { ...settings, disabledAt }, now);
      const label = settings.displayName ?? current.displayName;
      // An organization's provider narrowed: the sessions it started for a domain it no longer
      // lists end, as a verified domain's removal ends them (its sign-in would be refused now).
      const dropped = emailDomains && current.organizationId ? current.emailDomains.filter((d) => !emailDomains.includes(d)) : [];
      for (const domain of dropped) {
        const ended = await this.endings.ofProviderDomain(tx, id, domain, 'identity provider no longer signs in the domain');
        sessionsEnded += ended.sessions;
        grantsEnded += ended.grants;
      }
      if (changed.length) {
        const detail = {
          providerId: id,
          label,
          changed: changed.join(' '),
          ...(settings.enforce !== undefined ? { enforce: settings.enforce } : {}),
          ...(settings.allowSignUp !== undefined ? { allowSignUp: settings.allowSignUp } : {}),
          ...(emailDomains ? { emailDomains: emailDomains.join(' ') } : {}),
          ...(dropped.length ? { sessions: sessionsEnded, grants: grantsEnded } : {}),
        };
        await this.record(tx, owner, 'update', adminId, ip, detail);
      }
      if (changes.disabled === true) {
        const { sessions, grants } = await this.endings.ofProvider(tx, id, 'identity provider disabled');
        sessionsEnded += sessions;
        await this.record(tx, owner, 'disable', adminId, ip, { providerId: id, label, sessions, grants });
      } else if (changes.disabled === false && current.disabledAt) {
        await this.record(tx, owner, 'enable', adminId, ip, { providerId: id, label });
      }
      return { provider: { ...current, ...stripUndefined(settings), disabledAt, updatedAt: now }, sessionsEnded };
    });
    const linked = (await this.rowsOf(owner)).find((row) => row.id === id)?.linkedAccounts ?? 0;
    return { provider: this.toAdmin(provider, linked, await this.organizations.namesOf(provider.organizationId ? [provider.organizationId] : [])), sessionsEnded };
  }

  /**
   * Deletes a provider: the browser sessions started through it end with the grants they approved, its links go (the accounts
   * stay: one made by federation has no password, and its owner sets one with a reset link).
   * @throws ApiException 404, 409 (an organization's provider, to the instance's administrators)
   */
  async remove(id: string, adminId: string, ip: string | null, owner: ProviderOwner = INSTANCE): Promise<void> {
    await this.refuseOrganizationsProvider(id, owner);
    await this.uow.run(async (tx) => {
      const provider = await this.existing(tx, id, owner);
      const { sessions, grants } = await this.endings.ofProvider(tx, id, 'identity provider deleted');
      await this.providers.delete(tx, id);
      await this.record(tx, owner, 'delete', adminId, ip, { providerId: id, label: provider.displayName, sessions, grants });
    });
  }

  /**
   * An organization's deletion (OrganizationTeardown, in its `tx`): each of its providers goes as
   * remove() does it, the browser sessions it started (and the grants they approved) ending with it, recorded in the
   * organization's log.
   */
  async endForOrganization(tx: Tx, organizationId: string, now: Date): Promise<void> {
    for (const provider of await this.providers.lockedOfOrganization(tx, organizationId)) {
      const { sessions, grants } = await this.endings.ofProvider(tx, provider.id, 'organization deleted');
      await this.providers.delete(tx, provider.id);
      const detail = { providerId: provider.id, label: provider.displayName, sessions, grants, reason: 'organization deleted' };
      await this.audit.record('org.identity_provider_delete', { userId: null, ip: null, organizationId, detail, at: now }, tx);
    }
  }

  /**
   * A verified domain of the organization removed (OrganizationTeardown, in that change's `tx`):
   * the browser sessions its providers started for addresses of the domain end, with the grants
   * they approved, as disabling a provider ends all of its own (their sign-in would be refused
   * now); how many sessions.
   */
  async endForOrganizationDomain(tx: Tx, organizationId: string, domain: string): Promise<number> {
    let sessions = 0;
    for (const provider of await this.providers.lockedOfOrganization(tx, organizationId)) {
      sessions += (await this.endings.ofProviderDomain(tx, provider.id, domain, 'domain removed from the organization')).sessions;
    }
    return sessions;
  }

  /** The links of these people (admin pages: "last verified at the provider"). */
  linksOf(userIds: string[]): Promise<LinkForAdmin[]> {
    return this.links.forAdmin(userIds);
  }

  /** An admin removes a person's link; its browser sessions end with the grants they approved, audited with the admin, in one transaction. @throws ApiException 404 */
  async unlink(userId: string, linkId: string, adminId: string, ip: string | null): Promise<void> {
    const now = this.clock.now();
    const removed = await this.uow.run(async (tx) => {
      const gone = await this.links.delete(tx, linkId, userId);
      if (!gone) return false;
      const { sessions, grants } = await this.endings.ofLink(tx, gone.id, 'identity provider link removed');
      const detail = { providerId: gone.providerId, label: gone.providerName, linkId: gone.id, by: adminId, sessions, grants };
      await this.audit.record('federation.unlink', { userId: gone.userId, ip, detail, at: now }, tx);
      return true;
    });
    if (!removed) throw notFound('That person has no such link.');
  }

  private toAdmin(row: Omit<IdentityProviderRow, 'clientSecretSealed' | 'metadata'>, linkedAccounts: number, organizations: ReadonlyMap<string, { slug: string; name: string }>): AdminIdentityProvider {
    const org = (row.organizationId && organizations.get(row.organizationId)) || undefined;
    return {
      id: row.id,
      displayName: row.displayName,
      issuer: row.issuer,
      clientId: row.clientId,
      scopes: row.scopes.split(' ').filter(Boolean),
      emailDomains: row.emailDomains,
      enforce: row.enforce,
      allowSignUp: row.allowSignUp,
      mfaAcrValues: row.mfaAcrValues,
      disabled: row.disabledAt !== null,
      redirectUri: row.protocol === 'saml' && org ? `${this.config.publicUrl}/saml/${encodeURIComponent(org.slug)}/acs` : this.federation.redirectUri(row.id),
      protocol: row.protocol,
      linkedAccounts,
      createdAt: row.createdAt.toISOString(),
      organization: org ?? null,
    };
  }

  private async existing(tx: Tx, id: string, owner: ProviderOwner): Promise<IdentityProviderRow> {
    const provider = await this.providers.lockedById(tx, id);
    // An organization's SAML connection is changed by its own API (federation/saml/).
    if (!provider || !ownedBy(provider, owner) || (owner.organizationId === null && provider.organizationId) || provider.protocol !== 'openid') throw notFound(`No identity provider with the id ${id}.`);
    return provider;
  }

  /**
   * The instance's administrators see an organization's provider but do not change it: its
   * organization's admins answer for it (and its log records what they do), so they are pointed
   * there (409). Asked before the change's transaction (a provider's organization never changes;
   * `existing` holds to it under the lock too).
   */
  private async refuseOrganizationsProvider(id: string, owner: ProviderOwner): Promise<void> {
    if (owner.organizationId !== null) return;
    const provider = await this.providers.findById(id);
    if (!provider?.organizationId) return;
    const org = (await this.organizations.namesOf([provider.organizationId])).get(provider.organizationId);
    throw conflict(
      `The identity provider ${id} belongs to the organization “${org?.name ?? provider.organizationId}”: its admins manage it${org ? `, at /orgs/${org.slug}/identity-providers` : ''}.`,
    );
  }

  private rowsOf(owner: ProviderOwner) {
    return owner.organizationId ? this.providers.listOfOrganization(owner.organizationId) : this.providers.list();
  }

  /** A domain belongs to one provider: who may sign it in, and who enforces it, is never in doubt. */
  private async refuseClaimedDomains(domains: string[], exceptId: string | null, tx: Tx | undefined, owner: ProviderOwner): Promise<void> {
    const [claimed] = await this.providers.claimedElsewhere(domains, exceptId, tx, owner.organizationId);
    if (claimed) throw conflict(`The domain ${claimed.domain} belongs to the identity provider ${claimed.id} already.`);
  }

  /**
   * An organization's provider may list only domains the organization has verified (sign-in
   * checks them again, each time: a domain lost since stops its sign-ins).
   */
  private async refuseUnverifiedDomains(domains: string[], owner: ProviderOwner): Promise<void> {
    if (!owner.organizationId) return;
    const verified = new Set(await this.organizations.verifiedDomains(owner.organizationId));
    const unverified = domains.find((d) => !verified.has(d));
    if (unverified) {
      throw conflict(`The domain ${unverified} is not one this organization has verified: add it and verify it on the organization's domains first (its identity providers sign in only its verified domains).`);
    }
  }

  /** The change in the instance's log (`admin.identity_provider_*`) or, for an organization's provider, in the organization's (`org.identity_provider_*`; a disable or an enable is an update there). */
  private async record(tx: Tx, owner: ProviderOwner, action: 'create' | 'update' | 'disable' | 'enable' | 'delete', userId: string, ip: string | null, detail: Record<string, string | number | boolean | null>): Promise<void> {
    if (!owner.organizationId) {
      await this.audit.record(`admin.identity_provider_${action}`, { userId, ip, detail }, tx);
      return;
    }
    const type = action === 'create' || action === 'delete' ? (`org.identity_provider_${action}` as const) : 'org.identity_provider_update';
    const full = action === 'disable' || action === 'enable' ? { ...detail, disabled: action === 'disable' } : detail;
    await this.audit.record(type, { userId, ip, organizationId: owner.organizationId, detail: full }, tx);
  }
}

/** The instance's administrators see every provider (and change the instance's own: `existing`); an organization its own only. */
function ownedBy(provider: IdentityProviderRow, owner: ProviderOwner): boolean {
  return owner.organizationId === null || provider.organizationId === owner.organizationId;
}

/** An organization enforces its provider by its verified domains, not by the provider's `enforce`. */
const ENFORCE_BY_DOMAIN =
  "An organization's provider is enforced by its verified domains: set enforceSso on the domain (PATCH /api/orgs/{slug}/domains/{domain}), and people of that domain then sign in only through the organization's enabled provider.";

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
