import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';

/** Every statement on `organization_domains`. */
@Injectable()
export class OrganizationDomainsRepository {
  constructor(private readonly sql: Sql) {}

  /** The organization's verified domains, by name. */
  async verifiedDomains(organizationId: string): Promise<string[]> {
    const rows = await this.sql.rows<{ domain: string }>(
      `SELECT domain FROM organization_domains WHERE organization_id = $1 AND verified_at IS NOT NULL ORDER BY domain`,
      [organizationId],
    );
    return rows.map((r) => r.domain);
  }

  /** The organization that verified `domain`, with whether it enforces sign-in through its provider; undefined when none did. */
  async verifiedOwner(domain: string): Promise<{ organizationId: string; slug: string; enforceSso: boolean; joinPolicy: string } | undefined> {
    const [row] = await this.sql.rows<{ organizationId: string; slug: string; enforceSso: boolean; joinPolicy: string }>(
      `SELECT d.organization_id AS "organizationId", o.slug, d.enforce_sso AS "enforceSso", d.join_policy AS "joinPolicy"
         FROM organization_domains d JOIN organizations o ON o.id = d.organization_id
        WHERE d.domain = $1 AND d.verified_at IS NOT NULL`,
      [domain],
    );
    return row;
  }
}
