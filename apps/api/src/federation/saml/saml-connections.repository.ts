import { Injectable } from '@nestjs/common';
import { Sql } from '../../database/sql.js';
import type { Tx } from '../../database/tx.js';
import type { IdentityProviderRow } from '../identity-providers.repository.js';

/** An organization's SAML connection: its `identity_providers` row with the `saml_connections` row. */
export interface SamlConnectionRow {
  provider: IdentityProviderRow;
  organizationId: string;
  ssoUrl: string;
  certificates: string[];
  idpMetadataXml: string;
  allowIdpInitiated: boolean;
}

export type SamlConnectionChanges = Partial<Pick<SamlConnectionRow, 'ssoUrl' | 'certificates' | 'idpMetadataXml' | 'allowIdpInitiated'>>;

const CHANGE_COLUMNS: Record<keyof SamlConnectionChanges, string> = {
  ssoUrl: 'sso_url',
  certificates: 'certificates',
  idpMetadataXml: 'idp_metadata_xml',
  allowIdpInitiated: 'allow_idp_initiated',
};

/** Every statement on `saml_connections` and `saml_assertion_uses`. */
@Injectable()
export class SamlConnectionsRepository {
  constructor(private readonly sql: Sql) {}

  /** The organization's connection's own row (the caller reads its provider row), locked in `tx` when given one. */
  async ofOrganization(organizationId: string, tx?: Tx, lock = false): Promise<Omit<SamlConnectionRow, 'provider'> & { providerId: string } | undefined> {
    const [row] = await this.sql.rows<Omit<SamlConnectionRow, 'provider'> & { providerId: string }>(
      `SELECT provider_id AS "providerId", organization_id AS "organizationId", sso_url AS "ssoUrl", certificates, idp_metadata_xml AS "idpMetadataXml",
              allow_idp_initiated AS "allowIdpInitiated"
         FROM saml_connections WHERE organization_id = $1${lock ? ' FOR UPDATE' : ''}`,
      [organizationId],
      tx,
    );
    return row;
  }

  /** The organization whose connection the provider row is, if it is one. */
  async organizationOf(providerId: string): Promise<string | undefined> {
    const [row] = await this.sql.rows<{ organizationId: string }>(`SELECT organization_id AS "organizationId" FROM saml_connections WHERE provider_id = $1`, [providerId]);
    return row?.organizationId;
  }

  async insert(tx: Tx, row: Omit<SamlConnectionRow, 'provider'> & { providerId: string }): Promise<void> {
    await this.sql.rows(
      `INSERT INTO saml_connections (provider_id, organization_id, sso_url, certificates, idp_metadata_xml, allow_idp_initiated) VALUES ($1, $2, $3, $4, $5, $6)`,
      [row.providerId, row.organizationId, row.ssoUrl, row.certificates, row.idpMetadataXml, row.allowIdpInitiated],
      tx,
    );
  }

  async update(tx: Tx, providerId: string, changes: SamlConnectionChanges): Promise<void> {
    const entries = Object.entries(changes).filter(([, value]) => value !== undefined) as Array<[keyof SamlConnectionChanges, unknown]>;
    if (!entries.length) return;
    await this.sql.rows(
      `UPDATE saml_connections SET ${entries.map(([name], i) => `${CHANGE_COLUMNS[name]} = $${i + 2}`).join(', ')} WHERE provider_id = $1`,
      [providerId, ...entries.map(([, value]) => value)],
      tx,
    );
  }

  /**
   * Records the use of an assertion: true the first time (issuer, ID) is seen, false for a replay.
   * One statement, so two replicas given the same assertion at once accept it once.
   */
  async useAssertion(issuer: string, assertionId: string, now: Date, expiresAt: Date): Promise<boolean> {
    const rows = await this.sql.rows(
      `INSERT INTO saml_assertion_uses (issuer, assertion_id, used_at, expires_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1`,
      [issuer, assertionId, now, expiresAt],
    );
    return rows.length === 1;
  }

  /** Deletes up to `limit` uses whose assertion expired (retention/): it could not be accepted again anyway. */
  deleteExpiredUses(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM saml_assertion_uses WHERE (issuer, assertion_id) IN (SELECT issuer, assertion_id FROM saml_assertion_uses WHERE expires_at < $1 LIMIT $2)`,
      [now, limit],
      tx,
    );
  }
}
