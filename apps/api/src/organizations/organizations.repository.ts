import { Injectable } from '@nestjs/common';
import type { OrgRole } from '@prospect/contract';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

export interface OrganizationRow {
  id: string;
  slug: string;
  name: string;
}

/** An organization as one member sees it. */
export interface MembershipRow extends OrganizationRow {
  role: OrgRole;
}

export interface MemberRow {
  userId: string;
  email: string;
  name: string;
  role: OrgRole;
  joinedAt: Date;
}

/**
 * The one rule of "a credential ends with the state it was issued for" for organizations (issue #47):
 * a membership `m` does not count for a credential issued (its grant approved) at or before the
 * person's last departure from that organization, even when they are a member again; it counts for
 * one issued after, and for every credential when they never left (a first-time joiner's token
 * acts for the organization they join). `param` is the credential's issue instant (a token's
 * grant's approval, a browser session's sign-in), a timestamptz parameter; NULL leaves it out.
 */
const departureEndsIt = (param: string) =>
  `NOT EXISTS (SELECT 1 FROM organization_departures d
                WHERE d.organization_id = m.organization_id AND d.user_id = m.user_id AND d.left_at >= ${param}::timestamptz)`;

/** Every statement on `organizations`, `organization_members` and `organization_departures`. */
@Injectable()
export class OrganizationsRepository {
  constructor(private readonly sql: Sql) {}

  /** A new organization with its creator as its owner, in one statement; undefined when the slug is taken. */
  async insertWithOwner(slug: string, name: string, ownerId: string, now: Date, tx: Tx): Promise<OrganizationRow | undefined> {
    const [row] = await this.sql.rows<OrganizationRow>(
      `WITH org AS (
         INSERT INTO organizations (slug, name, created_at) VALUES ($1, $2, $4)
         ON CONFLICT (slug) DO NOTHING RETURNING id, slug, name
       ), owner AS (
         INSERT INTO organization_members (organization_id, user_id, role, created_at) SELECT id, $3, 'owner', $4 FROM org
       )
       SELECT id, slug, name FROM org`,
      [slug, name, ownerId, now],
      tx,
    );
    return row;
  }

  /** The person's organizations with their role, by name, as a credential issued at `issuedAt` acts for them (departureEndsIt). */
  listForUser(userId: string, issuedAt: Date | null): Promise<MembershipRow[]> {
    return this.sql.rows(
      `SELECT o.id, o.slug, o.name, m.role FROM organization_members m JOIN organizations o ON o.id = m.organization_id
        WHERE m.user_id = $1 AND ${departureEndsIt('$2')} ORDER BY o.name, o.slug`,
      [userId, issuedAt],
    );
  }

  /** The organization of `slug`, whoever asks (a SAML connection's public endpoints, issue #47). */
  async bySlug(slug: string): Promise<{ id: string; slug: string; name: string } | undefined> {
    const [row] = await this.sql.rows<{ id: string; slug: string; name: string }>(`SELECT id, slug, name FROM organizations WHERE slug = $1`, [slug]);
    return row;
  }

  /**
   * The organization of `slug` as `userId`, a member, sees it with a credential issued at `issuedAt`,
   * and whether that credential predates their last departure (departureEndsIt); undefined when
   * there is none or they are not a member.
   */
  async membership(slug: string, userId: string, issuedAt: Date | null): Promise<{ organization: MembershipRow; predatesDeparture: boolean } | undefined> {
    const [row] = await this.sql.rows<MembershipRow & { predatesDeparture: boolean }>(
      `SELECT o.id, o.slug, o.name, m.role, NOT ${departureEndsIt('$3')} AS "predatesDeparture"
         FROM organizations o JOIN organization_members m ON m.organization_id = o.id AND m.user_id = $2
        WHERE o.slug = $1`,
      [slug, userId, issuedAt],
    );
    if (!row) return undefined;
    const { predatesDeparture, ...organization } = row;
    return { organization, predatesDeparture };
  }

  /**
   * Locks the organization's row for the rest of `tx`: every change of its members' roles takes
   * this lock first, so two owners demoting each other at once cannot leave it with none.
   * False when it no longer exists.
   */
  async lock(tx: Tx, organizationId: string): Promise<boolean> {
    return (await this.sql.rows(`SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE`, [organizationId], tx)).length > 0;
  }

  async roleOf(tx: Tx, organizationId: string, userId: string): Promise<OrgRole | undefined> {
    const [row] = await this.sql.rows<{ role: OrgRole }>(`SELECT role FROM organization_members WHERE organization_id = $1 AND user_id = $2`, [organizationId, userId], tx);
    return row?.role;
  }

  async countOwners(tx: Tx, organizationId: string): Promise<number> {
    const [row] = await this.sql.rows<{ owners: number }>(`SELECT count(*)::int AS owners FROM organization_members WHERE organization_id = $1 AND role = 'owner'`, [organizationId], tx);
    return row!.owners;
  }

  async setRole(tx: Tx, organizationId: string, userId: string, role: OrgRole): Promise<void> {
    await this.sql.rows(`UPDATE organization_members SET role = $3 WHERE organization_id = $1 AND user_id = $2`, [organizationId, userId, role], tx);
  }

  /**
   * Ends a membership and records the departure (the latest one kept), in one statement: what was
   * issued before it never acts for the organization again (departureEndsIt). Every removal of a
   * member goes through here (an admin, leaving, the organization's directory).
   */
  async removeMember(tx: Tx, organizationId: string, userId: string, now: Date): Promise<void> {
    await this.sql.rows(
      `WITH gone AS (DELETE FROM organization_members WHERE organization_id = $1 AND user_id = $2 RETURNING organization_id, user_id)
       INSERT INTO organization_departures (organization_id, user_id, left_at) SELECT organization_id, user_id, $3 FROM gone
       ON CONFLICT (organization_id, user_id) DO UPDATE SET left_at = GREATEST(organization_departures.left_at, EXCLUDED.left_at)`,
      [organizationId, userId, now],
      tx,
    );
  }

  /** Adds a member with `role`, or leaves one who is already a member as they are; whether they were added. */
  async addMember(tx: Tx, organizationId: string, userId: string, role: OrgRole, now: Date): Promise<boolean> {
    return (
      (
        await this.sql.rows(
          `INSERT INTO organization_members (organization_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (organization_id, user_id) DO NOTHING RETURNING 1`,
          [organizationId, userId, role, now],
          tx,
        )
      ).length > 0
    );
  }

  listMembers(organizationId: string): Promise<MemberRow[]> {
    return this.sql.rows(
      `SELECT u.id AS "userId", u.email, u.name, m.role, m.created_at AS "joinedAt"
         FROM organization_members m JOIN users u ON u.id = m.user_id
        WHERE m.organization_id = $1
        ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, u.email`,
      [organizationId],
    );
  }

  async rename(tx: Tx, organizationId: string, name: string): Promise<void> {
    await this.sql.rows(`UPDATE organizations SET name = $2 WHERE id = $1`, [organizationId, name], tx);
  }

  /** Deletes it and, by its foreign keys, its members, invitations, domains and identity providers. */
  async delete(tx: Tx, organizationId: string): Promise<void> {
    await this.sql.rows(`DELETE FROM organizations WHERE id = $1`, [organizationId], tx);
  }

  /** These organizations' slugs and names (those that exist). */
  namesOf(ids: readonly string[]): Promise<OrganizationRow[]> {
    return this.sql.rows(`SELECT id, slug, name FROM organizations WHERE id = ANY($1::uuid[])`, [ids]);
  }

  /** The organizations whose only member is this person. */
  async soleMemberships(userId: string): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(
      `SELECT m.organization_id AS id FROM organization_members m
        WHERE m.user_id = $1 AND NOT EXISTS (SELECT 1 FROM organization_members x WHERE x.organization_id = m.organization_id AND x.user_id <> $1)`,
      [userId],
    );
    return rows.map((r) => r.id);
  }

  async hasMembers(tx: Tx, organizationId: string): Promise<boolean> {
    return (await this.sql.rows(`SELECT 1 FROM organization_members WHERE organization_id = $1 LIMIT 1`, [organizationId], tx)).length > 0;
  }

  /**
   * Locks, for the rest of `tx`, every organization the person is a member of, in one order (no
   * deadlock between two such locks); their memberships as they are under those locks (read by a
   * statement of its own: one that waited for a lock would see the rows it joined as they were).
   */
  async lockMembershipsOf(tx: Tx, userId: string): Promise<Array<{ organizationId: string; role: OrgRole }>> {
    await this.sql.rows(`SELECT o.id FROM organizations o JOIN organization_members m ON m.organization_id = o.id AND m.user_id = $1 ORDER BY o.id FOR UPDATE OF o`, [userId], tx);
    return this.sql.rows(`SELECT organization_id AS "organizationId", role FROM organization_members WHERE user_id = $1 ORDER BY organization_id`, [userId], tx);
  }

  /**
   * The organizations a person is the only owner of and that have other members: what deleting
   * their account would leave without an owner (in `tx` when given, after lockMembershipsOf).
   */
  soleOwnerships(userId: string, tx?: Tx): Promise<OrganizationRow[]> {
    return this.sql.rows(
      `SELECT o.id, o.slug, o.name FROM organization_members m JOIN organizations o ON o.id = m.organization_id
        WHERE m.user_id = $1 AND m.role = 'owner'
          AND NOT EXISTS (SELECT 1 FROM organization_members x WHERE x.organization_id = m.organization_id AND x.role = 'owner' AND x.user_id <> $1)
          AND EXISTS (SELECT 1 FROM organization_members y WHERE y.organization_id = m.organization_id AND y.user_id <> $1)
        ORDER BY o.slug`,
      [userId],
      tx,
    );
  }
}
