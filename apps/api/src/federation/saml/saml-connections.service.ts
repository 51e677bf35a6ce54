import { createHash, X509Certificate } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { SamlConnection, SamlServiceProvider, UpdateSamlConnectionRequest } from '@prospect/contract';
import { AuditService } from '../../audit/audit.service.js';
import { conflict, notFound } from '../../common/api-exception.js';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { isUniqueViolation } from '../../database/sql.js';
import type { Tx } from '../../database/tx.js';
import { UnitOfWork } from '../../database/unit-of-work.js';
import { FederatedEndings } from '../federated-endings.js';
import { type IdentityProviderChanges, IdentityProvidersRepository } from '../identity-providers.repository.js';
import { parseIdpMetadata } from './idp-metadata.js';
import { type SamlConnectionRow, SamlConnectionsRepository } from './saml-connections.repository.js';

/** The organization a call is about, as OrgMembershipGuard or the org pages found it. */
export interface SamlOwner {
  organization: { id: string; slug: string; name: string };
  userId: string;
  ip: string | null;
}

/** Where the service provider of an organization is: what its admin enters at the IdP. */
export function serviceProviderOf(publicUrl: string, slug: string): SamlServiceProvider & { signInUrl: string } {
  const base = `${publicUrl}/saml/${encodeURIComponent(slug)}`;
  // The entity id is the metadata's URL, as Okta, Entra ID and Google expect of an SP.
  return { spEntityId: `${base}/metadata`, acsUrl: `${base}/acs`, metadataUrl: `${base}/metadata`, signInUrl: `${base}/login` };
}

/**
 * An organization's SAML 2.0 connection (issue #47), for its admins: registered from the IdP's
 * metadata (PUT), read, its policy changed (PATCH), removed. The connection is an
 * `identity_providers` row (protocol 'saml', issuer = the IdP's entityID) with a
 * `saml_connections` row, so its links, its disabling and its deletion are those of every
 * provider; each change one locked transaction, recorded in the organization's log as an
 * identity provider's change (`org.identity_provider_*`, `protocol: saml`).
 */
@Injectable()
export class SamlConnectionsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly providers: IdentityProvidersRepository,
    private readonly connections: SamlConnectionsRepository,
    private readonly endings: FederatedEndings,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  /** The organization's connection, if it has one (the provider row with the SAML row). */
  async find(organizationId: string, tx?: Tx, lock = false): Promise<SamlConnectionRow | undefined> {
    const saml = await this.connections.ofOrganization(organizationId, tx, lock);
    if (!saml) return undefined;
    const provider = tx ? await this.providers.lockedById(tx, saml.providerId) : await this.providers.findById(saml.providerId);
    return provider && { ...saml, provider };
  }

  /**
   * Registers the IdP from its metadata, or takes new metadata of the same IdP (a new certificate,
   * a new single sign-on URL). Another IdP (another entityID) is refused: links are by entityID,
   * so the connection is removed first.
   * @throws ApiException 400 (what the metadata lacks), 409 (another IdP; an entityID registered elsewhere)
   */
  async put(owner: SamlOwner, idpMetadataXml: string): Promise<SamlServiceProvider> {
    const idp = parseIdpMetadata(idpMetadataXml);
    const { organization } = owner;
    try {
      await this.uow.run(async (tx) => {
        const now = this.clock.now();
        const current = await this.find(organization.id, tx, true);
        if (current && current.provider.issuer !== idp.entityId) {
          throw conflict(`This organization’s SAML connection is with the IdP ${current.provider.issuer}, not ${idp.entityId}: people are linked by the IdP’s entityID, so remove the connection first (DELETE), then register the new IdP.`);
        }
        if (current) {
          await this.connections.update(tx, current.provider.id, { ssoUrl: idp.ssoUrl, certificates: idp.certificates, idpMetadataXml });
          await this.providers.update(tx, current.provider.id, {}, now);
          await this.record(tx, owner, 'update', { providerId: current.provider.id, label: current.provider.displayName, protocol: 'saml', changed: 'idpMetadataXml', ssoUrl: idp.ssoUrl, certificates: idp.certificates.length });
          return;
        }
        const providerId = `saml-${organization.id}`;
        const displayName = `${organization.name.slice(0, 50)} (SAML)`;
        await this.providers.insert(tx, {
          id: providerId,
          displayName,
          issuer: idp.entityId,
          // The OpenID columns of a SAML row: nothing to hold.
          clientId: '',
          clientSecretSealed: Buffer.alloc(0),
          tokenEndpointAuthMethod: 'client_secret_basic',
          scopes: '',
          // Signs in the organization's verified domains, read at each sign-in (SamlSignIn), not a list kept here.
          emailDomains: [],
          enforce: false,
          allowSignUp: false,
          mfaAcrValues: [],
          metadata: {},
          discoveredAt: now,
          createdByUserId: owner.userId,
          createdAt: now,
          organizationId: organization.id,
          protocol: 'saml',
        });
        await this.connections.insert(tx, { providerId, organizationId: organization.id, ssoUrl: idp.ssoUrl, certificates: idp.certificates, idpMetadataXml, allowIdpInitiated: false });
        await this.record(tx, owner, 'create', { providerId, label: displayName, protocol: 'saml', issuer: idp.entityId, ssoUrl: idp.ssoUrl });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`The IdP ${idp.entityId} is registered already on this Prospect (by another organization, or as an OpenID provider).`);
      throw err;
    }
    const { spEntityId, acsUrl, metadataUrl } = serviceProviderOf(this.config.publicUrl, organization.slug);
    return { spEntityId, acsUrl, metadataUrl };
  }

  /** @throws ApiException 404 when the organization has no connection. */
  async get(organization: { id: string; slug: string }): Promise<SamlConnection> {
    const found = await this.find(organization.id);
    if (!found) throw notFound('This organization has no SAML connection: register its IdP with PUT and its metadata XML.');
    return this.toApi(found, organization.slug, await this.linkedAccounts(found.provider.id));
  }

  /**
   * The policy: `enforce` (the organization's verified domains sign in only through it, at once),
   * `allowSignUp`, `secondFactorContexts`, `allowIdpInitiated`, `disabled` (its sign-ins refused,
   * and every browser session it started ended, with the grants they approved). One locked transaction, audited.
   * @throws ApiException 404
   */
  async update(owner: SamlOwner, changes: UpdateSamlConnectionRequest): Promise<SamlConnection> {
    const id = await this.uow.run(async (tx) => {
      const current = await this.find(owner.organization.id, tx, true);
      if (!current) throw notFound('This organization has no SAML connection.');
      const now = this.clock.now();
      const { provider } = current;
      const settings: IdentityProviderChanges = { enforce: changes.enforce, allowSignUp: changes.allowSignUp, mfaAcrValues: changes.secondFactorContexts };
      if (changes.disabled === true && !provider.disabledAt) settings.disabledAt = now;
      if (changes.disabled === false) settings.disabledAt = null;
      await this.providers.update(tx, provider.id, settings, now);
      await this.connections.update(tx, provider.id, { allowIdpInitiated: changes.allowIdpInitiated });
      const ended = changes.disabled === true ? await this.endings.ofProvider(tx, provider.id, 'SAML connection disabled') : undefined;
      const changed = Object.entries(changes).filter(([, value]) => value !== undefined);
      const detail: Record<string, string | number | boolean | null> = { providerId: provider.id, label: provider.displayName, protocol: 'saml', changed: changed.map(([name]) => name).join(' ') };
      for (const [name, value] of changed) detail[name] = Array.isArray(value) ? value.join(' ') : (value as boolean);
      if (ended) Object.assign(detail, ended);
      await this.record(tx, owner, 'update', detail);
      return provider.id;
    });
    const found = await this.find(owner.organization.id);
    return this.toApi(found!, owner.organization.slug, await this.linkedAccounts(id));
  }

  /**
   * Removes the connection: the browser sessions it started end with the grants they approved, and its links go (the accounts
   * stay; one it made has no password, and its owner sets one with a reset link).
   * @throws ApiException 404
   */
  async remove(owner: SamlOwner): Promise<void> {
    await this.uow.run(async (tx) => {
      const current = await this.find(owner.organization.id, tx, true);
      if (!current) throw notFound('This organization has no SAML connection.');
      const { sessions, grants } = await this.endings.ofProvider(tx, current.provider.id, 'SAML connection removed');
      await this.providers.delete(tx, current.provider.id);
      await this.record(tx, owner, 'delete', { providerId: current.provider.id, label: current.provider.displayName, protocol: 'saml', sessions, grants });
    });
  }

  /** Deletes up to `limit` uses of assertions expired by `now` (retention/): an expired assertion is refused anyway. */
  purgeExpiredAssertionUses(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.connections.deleteExpiredUses(tx, now, limit);
  }

  private linkedAccounts(providerId: string): Promise<number> {
    return this.providers.linkedAccounts(providerId);
  }

  private toApi(row: SamlConnectionRow, slug: string, linkedAccounts: number): SamlConnection {
    const { provider } = row;
    return {
      ...serviceProviderOf(this.config.publicUrl, slug),
      idpEntityId: provider.issuer,
      ssoUrl: row.ssoUrl,
      certificates: row.certificates.map(describeCertificate),
      enforce: provider.enforce,
      allowSignUp: provider.allowSignUp,
      allowIdpInitiated: row.allowIdpInitiated,
      secondFactorContexts: provider.mfaAcrValues,
      disabled: provider.disabledAt !== null,
      linkedAccounts,
      createdAt: provider.createdAt.toISOString(),
      updatedAt: provider.updatedAt.toISOString(),
    };
  }

  private async record(tx: Tx, owner: SamlOwner, action: 'create' | 'update' | 'delete', detail: Record<string, string | number | boolean | null>): Promise<void> {
    await this.audit.record(`org.identity_provider_${action}`, { userId: owner.userId, ip: owner.ip, organizationId: owner.organization.id, detail }, tx);
  }
}

/** A certificate as an admin checks it against the IdP's: its subject, expiry and SHA-256 fingerprint. */
function describeCertificate(pem: string): { subject: string; notAfter: string; sha256: string } {
  const cert = new X509Certificate(pem);
  const sha256 = createHash('sha256').update(cert.raw).digest('hex').toUpperCase().match(/.{2}/g)!.join(':');
  return { subject: cert.subject.replace(/\n/g, ', '), notAfter: new Date(cert.validTo).toISOString(), sha256 };
}
