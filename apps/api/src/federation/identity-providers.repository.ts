import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

export type TokenEndpointAuthMethod = 'client_secret_basic' | 'client_secret_post';

/** A row of `identity_providers`. */
export interface IdentityProviderRow {
  id: string;
  displayName: string;
  issuer: string;
  clientId: string;
  clientSecretSealed: Buffer;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  /** Space-separated. */
  scopes: string;
  emailDomains: string[];
  enforce: boolean;
  allowSignUp: boolean;
  /** The `acr` values that stand for a second factor at the provider (provider-claims.ts). */
  mfaAcrValues: string[];
  /** The provider's discovery document, as read when it was created. */
  metadata: Record<string, unknown>;
  discoveredAt: Date;
  disabledAt: Date | null;
  createdByUserId: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** The organization that registered it (issue #44), or null for the instance's own. */
  organizationId: string | null;
  /**
   * 'openid', or 'saml' for an organization's SAML connection (issue #47, federation/saml/): its
   * issuer is the IdP's entityID, its `mfaAcrValues` the AuthnContextClassRefs that count as a
   * second factor, and its OpenID columns (client id, secret, scopes, metadata) are empty.
   */
  protocol: IdentityProviderProtocol;
}

export type IdentityProviderProtocol = 'openid' | 'saml';

/** What an admin may change of a provider (the issuer stays: links are by issuer and subject). */
export type IdentityProviderChanges = Partial<
  Pick<IdentityProviderRow, 'displayName' | 'clientId' | 'clientSecretSealed' | 'scopes' | 'emailDomains' | 'enforce' | 'allowSignUp' | 'mfaAcrValues' | 'disabledAt'>
>;

const COLUMNS = `p.id, p.display_name AS "displayName", p.issuer, p.client_id AS "clientId", p.client_secret_sealed AS "clientSecretSealed",
  p.token_endpoint_auth_method AS "tokenEndpointAuthMethod", p.scopes, p.email_domains AS "emailDomains", p.enforce, p.allow_sign_up AS "allowSignUp", p.mfa_acr_values AS "mfaAcrValues",
  p.metadata, p.discovered_at AS "discoveredAt", p.disabled_at AS "disabledAt", p.created_by_user_id AS "createdByUserId",
  p.created_at AS "createdAt", p.updated_at AS "updatedAt", p.organization_id AS "organizationId", p.protocol`;

const CHANGE_COLUMNS: Record<keyof IdentityProviderChanges, string> = {
  displayName: 'display_name',
  clientId: 'client_id',
  clientSecretSealed: 'client_secret_sealed',
  scopes: 'scopes',
  emailDomains: 'email_domains',
  enforce: 'enforce',
  allowSignUp: 'allow_sign_up',
  mfaAcrValues: 'mfa_acr_values',
  disabledAt: 'disabled_at',
};

/** Every statement on `identity_providers`. */
@Injectable()
export class IdentityProvidersRepository {
  constructor(private readonly sql: Sql) {}

  async findById(id: string): Promise<IdentityProviderRow | undefined> {
    const [row] = await this.sql.rows<IdentityProviderRow>(`SELECT ${COLUMNS} FROM identity_providers p WHERE p.id = $1`, [id]);
    return row;
  }

  /** The provider's row locked in `tx` (an admin's change, racing sign-ins and other changes). */
  async lockedById(tx: Tx, id: string): Promise<IdentityProviderRow | undefined> {
    const [row] = await this.sql.rows<IdentityProviderRow>(`SELECT ${COLUMNS} FROM identity_providers p WHERE p.id = $1 FOR UPDATE`, [id], tx);
    return row;
  }

  /** Every provider, oldest first, with how many accounts are linked to it. */
  list(): Promise<Array<IdentityProviderRow & { linkedAccounts: number }>> {
    return this.sql.rows(
      `SELECT ${COLUMNS}, (SELECT count(*)::int FROM federated_identities l WHERE l.provider_id = p.id) AS "linkedAccounts"
         FROM identity_providers p ORDER BY p.created_at, p.id`,
      [],
    );
  }

  /** The OpenID providers an organization registered, oldest first, with how many accounts are linked to each (its SAML connection has a page of its own). */
  listOfOrganization(organizationId: string): Promise<Array<IdentityProviderRow & { linkedAccounts: number }>> {
    return this.sql.rows(
      `SELECT ${COLUMNS}, (SELECT count(*)::int FROM federated_identities l WHERE l.provider_id = p.id) AS "linkedAccounts"
         FROM identity_providers p WHERE p.organization_id = $1 AND p.protocol = 'openid' ORDER BY p.created_at, p.id`,
      [organizationId],
    );
  }

  /**
   * The enabled instance-wide providers, for the sign-in page's buttons. An organization's are not
   * offered to everyone (its admins name them, and a name on the instance's own page would read as
   * the instance's word): its people reach it by their address (enforced) or its link.
   */
  listEnabled(): Promise<Array<{ id: string; displayName: string }>> {
    return this.sql.rows(`SELECT id, display_name AS "displayName" FROM identity_providers WHERE disabled_at IS NULL AND organization_id IS NULL ORDER BY created_at, id`, []);
  }

  /** The enabled instance-wide provider that enforces this (lower-case) mail domain, if any (an organization enforces through its domains). */
  async enforcingFor(domain: string): Promise<{ id: string; displayName: string } | undefined> {
    const [row] = await this.sql.rows<{ id: string; displayName: string }>(
      `SELECT id, display_name AS "displayName" FROM identity_providers WHERE enforce AND disabled_at IS NULL AND organization_id IS NULL AND $1 = ANY (email_domains) LIMIT 1`,
      [domain],
    );
    return row;
  }

  /** How many accounts are linked to the provider. */
  async linkedAccounts(id: string): Promise<number> {
    const [row] = await this.sql.rows<{ n: number }>(`SELECT count(*)::int AS n FROM federated_identities WHERE provider_id = $1`, [id]);
    return row?.n ?? 0;
  }

  /** The organization's enabled SAML connection, when it enforces the organization's verified domains (issue #47). */
  async enforcingSamlOf(organizationId: string): Promise<{ id: string; displayName: string } | undefined> {
    const [row] = await this.sql.rows<{ id: string; displayName: string }>(
      `SELECT id, display_name AS "displayName" FROM identity_providers WHERE organization_id = $1 AND protocol = 'saml' AND enforce AND disabled_at IS NULL`,
      [organizationId],
    );
    return row;
  }

  /** The organization's enabled provider that may sign in this (lower-case) mail domain, if any. */
  async enabledOfOrganizationFor(organizationId: string, domain: string): Promise<{ id: string; displayName: string } | undefined> {
    const [row] = await this.sql.rows<{ id: string; displayName: string }>(
      `SELECT id, display_name AS "displayName" FROM identity_providers
        WHERE organization_id = $1 AND disabled_at IS NULL AND $2 = ANY (email_domains) ORDER BY created_at, id LIMIT 1`,
      [organizationId, domain],
    );
    return row;
  }

  /**
   * Other providers that already claim one of these domains (a domain belongs to one provider).
   * For an organization's provider (`organizationId`), only the instance's and the organization's
   * own count: another organization's claim is stale by construction, since one organization at
   * most has verified a domain, and it is this one.
   */
  claimedElsewhere(domains: string[], exceptId: string | null, tx?: Tx, organizationId: string | null = null): Promise<Array<{ id: string; domain: string }>> {
    return this.sql.rows(
      `SELECT p.id, d AS domain FROM identity_providers p, unnest(p.email_domains) d
        WHERE d = ANY ($1::text[]) AND ($2::text IS NULL OR p.id <> $2)
          AND ($3::uuid IS NULL OR p.organization_id IS NULL OR p.organization_id = $3) ORDER BY d`,
      [domains, exceptId, organizationId],
      tx,
    );
  }

  /** The organization's providers locked in `tx` (its deletion), with their names. */
  lockedOfOrganization(tx: Tx, organizationId: string): Promise<Array<{ id: string; displayName: string }>> {
    return this.sql.rows(`SELECT id, display_name AS "displayName" FROM identity_providers WHERE organization_id = $1 ORDER BY id FOR UPDATE`, [organizationId], tx);
  }

  /** @throws a unique violation (isUniqueViolation) when the id or the issuer is taken. */
  async insert(tx: Tx, row: Omit<IdentityProviderRow, 'disabledAt' | 'updatedAt' | 'protocol'> & { protocol?: IdentityProviderProtocol }): Promise<void> {
    await this.sql.rows(
      `INSERT INTO identity_providers (id, display_name, issuer, client_id, client_secret_sealed, token_endpoint_auth_method, scopes, email_domains,
                                       enforce, allow_sign_up, metadata, discovered_at, created_by_user_id, created_at, updated_at, mfa_acr_values, organization_id, protocol)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14, $15, $16, $17)`,
      [
        row.id,
        row.displayName,
        row.issuer,
        row.clientId,
        row.clientSecretSealed,
        row.tokenEndpointAuthMethod,
        row.scopes,
        row.emailDomains,
        row.enforce,
        row.allowSignUp,
        JSON.stringify(row.metadata),
        row.discoveredAt,
        row.createdByUserId,
        row.createdAt,
        row.mfaAcrValues,
        row.organizationId,
        row.protocol ?? 'openid',
      ],
      tx,
    );
  }

  /** The changes, and `updated_at` (which versions the relying party's configuration of it). */
  async update(tx: Tx, id: string, changes: IdentityProviderChanges, now: Date): Promise<void> {
    const entries = Object.entries(changes).filter(([, value]) => value !== undefined) as Array<[keyof IdentityProviderChanges, unknown]>;
    const sets = entries.map(([name], i) => `${CHANGE_COLUMNS[name]} = $${i + 3}`);
    await this.sql.rows(
      `UPDATE identity_providers SET ${[...sets, 'updated_at = $2'].join(', ')} WHERE id = $1`,
      [id, now, ...entries.map(([, value]) => value)],
      tx,
    );
  }

  /** The provider's discovery document as read again now (and a new `updated_at`: the relying party rebuilds its configuration). */
  async rediscovered(id: string, metadata: Record<string, unknown>, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE identity_providers SET metadata = $2, discovered_at = $3, updated_at = $3 WHERE id = $1`, [id, JSON.stringify(metadata), now]);
  }

  /** Deletes the provider; its links go with it (foreign key). */
  async delete(tx: Tx, id: string): Promise<void> {
    await this.sql.rows(`DELETE FROM identity_providers WHERE id = $1`, [id], tx);
  }
}
