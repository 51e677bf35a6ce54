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

/** Every statement on `organizations` and `organization_members`. */
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

  /** The person's organizations with their role, by name. */
  listForUser(userId: string): Promise<MembershipRow[]> {
    return this.sql.rows(
      `SELECT o.id, o.slug, o.name, m.role FROM organization_members m JOIN organizations o ON o.id = m.organization_id
        WHERE m.user_id = $1 ORDER BY o.name, o.slug`,
      [userId],
    );
  }

  /** The organization of `slug`, whoever asks (a SAML connection's public endpoints, issue #47). */
  async bySlug(slug: string): Promise<{ id: string; slug: string; name: string } | undefined> {
    const [row] = await this.sql.rows<{ id: string; slug: string; name: string }>(`SELECT id, slug, name FROM organizations WHERE slug = $1`, [slug]);
    return row;
  }

  /** The organization of `slug` as `userId` sees it: undefined when there is none or they are not a member. */
  async membership(slug: string, userId: string): Promise<MembershipRow | undefined> {
    const [row] = await this.sql.rows<MembershipRow>(
      `SELECT o.id, o.slug, o.name, m.role FROM organizations o JOIN organization_members m ON m.organization_id = o.id AND m.user_id = $2
        WHERE o.slug = $1`,
      [slug, userId],
    );
    return row;
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

  async removeMember(tx: Tx, organizationId: string, userId: string): Promise<void> {
    await this.sql.rows(`DELETE FROM organization_members WHERE organization_id = $1 AND user_id = $2`, [organizationId, userId], tx);
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
