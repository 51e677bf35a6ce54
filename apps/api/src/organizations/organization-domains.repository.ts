import { Injectable } from '@nestjs/common';
import type { JoinPolicy } from '@prospect/contract';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** One domain of an organization. */
export interface DomainRow {
  domain: string;
  verificationToken: string;
  verifiedAt: Date | null;
  joinPolicy: JoinPolicy;
  enforceSso: boolean;
}

/** An organization a person could join through a verified domain, and where they stand. */
export interface JoinTargetRow {
  organizationId: string | null;
  slug: string | null;
  name: string | null;
  email: string;
  emailVerified: boolean;
  /** The organization's verified domain the person's address is in; null when none. */
  domain: string | null;
  joinPolicy: JoinPolicy | null;
  member: boolean;
}

export interface JoinableRow {
  slug: string;
  name: string;
  domain: string;
  joinPolicy: 'request' | 'auto';
  requested: boolean;
}

const DOMAIN_COLUMNS = `domain, verification_token AS "verificationToken", verified_at AS "verifiedAt", join_policy AS "joinPolicy", enforce_sso AS "enforceSso"`;

/** Every statement on `organization_domains`. */
@Injectable()
export class OrganizationDomainsRepository {
  constructor(private readonly sql: Sql) {}

  /** The organization's verified domains, by name. */
  async verifiedDomains(organizationId: string, tx?: Tx): Promise<string[]> {
    const rows = await this.sql.rows<{ domain: string }>(
      `SELECT domain FROM organization_domains WHERE organization_id = $1 AND verified_at IS NOT NULL ORDER BY domain`,
      [organizationId],
      tx,
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

  /** The organization's domains, by name. */
  list(organizationId: string): Promise<DomainRow[]> {
    return this.sql.rows(`SELECT ${DOMAIN_COLUMNS} FROM organization_domains WHERE organization_id = $1 ORDER BY domain`, [organizationId]);
  }

  async find(organizationId: string, domain: string, tx?: Tx): Promise<DomainRow | undefined> {
    const [row] = await this.sql.rows<DomainRow>(`SELECT ${DOMAIN_COLUMNS} FROM organization_domains WHERE organization_id = $1 AND domain = $2`, [organizationId, domain], tx);
    return row;
  }

  async count(organizationId: string, tx: Tx): Promise<number> {
    const [row] = await this.sql.rows<{ n: number }>(`SELECT count(*)::int AS n FROM organization_domains WHERE organization_id = $1`, [organizationId], tx);
    return row!.n;
  }

  /**
   * Claims `domain` for the organization, unverified, unless another organization has verified it
   * (then, and when this one claimed it already, undefined). A verification committed by another
   * organization just after this leaves this claim unverifiable, which its verification then says.
   */
  async insert(tx: Tx, organizationId: string, domain: string, token: string, now: Date): Promise<DomainRow | undefined> {
    const [row] = await this.sql.rows<DomainRow>(
      `INSERT INTO organization_domains (organization_id, domain, verification_token, created_at)
       SELECT $1::uuid, $2::text, $3::text, $4::timestamptz
        WHERE NOT EXISTS (SELECT 1 FROM organization_domains WHERE domain = $2 AND verified_at IS NOT NULL AND organization_id <> $1)
       ON CONFLICT (organization_id, domain) DO NOTHING
       RETURNING ${DOMAIN_COLUMNS}`,
      [organizationId, domain, token, now],
      tx,
    );
    return row;
  }

  /** Whether an organization other than this one has verified `domain`. */
  async verifiedElsewhere(organizationId: string, domain: string, tx?: Tx): Promise<boolean> {
    const rows = await this.sql.rows(`SELECT 1 FROM organization_domains WHERE domain = $2 AND verified_at IS NOT NULL AND organization_id <> $1`, [organizationId, domain], tx);
    return rows.length > 0;
  }

  /**
   * Marks the claim verified, if its token is still `token` and it is not verified yet; undefined
   * otherwise. @throws a unique violation (organization_domains_verified_domain) when another
   * organization verified the domain first: that index, not a read before, decides between two
   * organizations verifying one domain at once.
   */
  async markVerified(tx: Tx, organizationId: string, domain: string, token: string, now: Date): Promise<DomainRow | undefined> {
    const [row] = await this.sql.rows<DomainRow>(
      `UPDATE organization_domains SET verified_at = $4
        WHERE organization_id = $1 AND domain = $2 AND verification_token = $3 AND verified_at IS NULL
       RETURNING ${DOMAIN_COLUMNS}`,
      [organizationId, domain, token, now],
      tx,
    );
    return row;
  }

  /** Sets what is given (null: keeps it); the domain as it is now, undefined when the organization has no such domain. */
  async update(tx: Tx, organizationId: string, domain: string, joinPolicy: JoinPolicy | null, enforceSso: boolean | null): Promise<DomainRow | undefined> {
    const [row] = await this.sql.rows<DomainRow>(
      `UPDATE organization_domains SET join_policy = COALESCE($3::text, join_policy), enforce_sso = COALESCE($4::boolean, enforce_sso)
        WHERE organization_id = $1 AND domain = $2
       RETURNING ${DOMAIN_COLUMNS}`,
      [organizationId, domain, joinPolicy, enforceSso],
      tx,
    );
    return row;
  }

  async remove(tx: Tx, organizationId: string, domain: string): Promise<DomainRow | undefined> {
    const [row] = await this.sql.rows<DomainRow>(`DELETE FROM organization_domains WHERE organization_id = $1 AND domain = $2 RETURNING ${DOMAIN_COLUMNS}`, [organizationId, domain], tx);
    return row;
  }

  /**
   * Whether the organization has an enabled identity provider of its own (federation/'s table, read
   * only): a domain may be enforced to sign in through one only then.
   */
  async hasEnabledIdentityProvider(organizationId: string, tx?: Tx): Promise<boolean> {
    const rows = await this.sql.rows(`SELECT 1 FROM identity_providers WHERE organization_id = $1 AND disabled_at IS NULL LIMIT 1`, [organizationId], tx);
    return rows.length > 0;
  }

  /**
   * The person `userId` and the organization of `slug` as a join sees them: their address and
   * whether it is verified, the organization's verified domain that address is in (the domain after
   * the last "@", as federation reads it), its policy, and whether they are a member already. The
   * organization's fields are null when there is no such slug.
   */
  async joinTarget(slug: string, userId: string, tx?: Tx): Promise<JoinTargetRow | undefined> {
    const [row] = await this.sql.rows<JoinTargetRow>(
      `SELECT o.id AS "organizationId", o.slug, o.name, u.email, u.email_verified_at IS NOT NULL AS "emailVerified",
              d.domain, d.join_policy AS "joinPolicy",
              EXISTS (SELECT 1 FROM organization_members m WHERE m.organization_id = o.id AND m.user_id = u.id) AS "member"
         FROM users u
         LEFT JOIN organizations o ON o.slug = $1
         LEFT JOIN organization_domains d
           ON d.organization_id = o.id AND d.verified_at IS NOT NULL AND d.domain = lower(substring(u.email FROM '[^@]+$'))
        WHERE u.id = $2`,
      [slug, userId],
      tx,
    );
    return row;
  }

  /** The organizations `userId` may join or ask to join through the verified domain of their verified address, not being a member. */
  joinableFor(userId: string): Promise<JoinableRow[]> {
    return this.sql.rows(
      `SELECT o.slug, o.name, d.domain, d.join_policy AS "joinPolicy",
              EXISTS (SELECT 1 FROM organization_join_requests r WHERE r.organization_id = o.id AND r.user_id = u.id) AS "requested"
         FROM users u
         JOIN organization_domains d
           ON d.verified_at IS NOT NULL AND d.domain = lower(substring(u.email FROM '[^@]+$')) AND d.join_policy IN ('request', 'auto')
         JOIN organizations o ON o.id = d.organization_id
        WHERE u.id = $1 AND u.email_verified_at IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM organization_members m WHERE m.organization_id = o.id AND m.user_id = u.id)
        ORDER BY o.name, o.slug`,
      [userId],
    );
  }
}
