import { Injectable } from '@nestjs/common';
import type { ScimGroupRole } from '@prospect/contract';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** A provisioned person (`scim_users`). */
export interface ScimUserRow {
  id: string;
  userId: string;
  userName: string;
  externalId: string | null;
  givenName: string | null;
  familyName: string | null;
  displayName: string | null;
  active: boolean;
  disabledAccount: boolean;
  /** The account's `disabled_at` a deactivation of this organization set (null when it disabled nothing). */
  accountDisabledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A directory's group (`scim_groups`). */
export interface ScimGroupRow {
  id: string;
  displayName: string;
  externalId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface GroupMemberRow {
  groupId: string;
  scimUserId: string;
  userName: string;
}

/** The person's fields a directory writes. */
export interface ScimUserFields {
  userName: string;
  externalId: string | null;
  givenName: string | null;
  familyName: string | null;
  displayName: string | null;
}

/** What a list asks for: one `column = value` condition (scim-filter.ts), a page. */
export interface ListQuery {
  where: { column: string; value: string; caseInsensitive: boolean } | null;
  offset: number;
  limit: number;
}

const USER = `id, user_id AS "userId", user_name AS "userName", external_id AS "externalId", given_name AS "givenName", family_name AS "familyName",
  display_name AS "displayName", active, disabled_account AS "disabledAccount", account_disabled_at AS "accountDisabledAt", created_at AS "createdAt", updated_at AS "updatedAt"`;
const GROUP = `id, display_name AS "displayName", external_id AS "externalId", created_at AS "createdAt", updated_at AS "updatedAt"`;

/** The columns a filter may compare, by table (scim-filter.ts maps SCIM's attributes to them). */
/** A SCIM id is a UUID; anything else finds nothing (rather than a cast error). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const USER_COLUMNS = new Set(['id', 'user_name', 'external_id']);
const GROUP_COLUMNS = new Set(['id', 'display_name', 'external_id']);

/** Every statement on `scim_users`, `scim_groups`, `scim_group_members` and `scim_group_roles`. */
@Injectable()
export class ScimDirectoryRepository {
  constructor(private readonly sql: Sql) {}

  // People

  /** `accountEpoch`: the account's credential epoch when the directory made it now; null when it linked an account that existed. */
  async insertUser(tx: Tx, organizationId: string, userId: string, fields: ScimUserFields, active: boolean, accountEpoch: number | null, now: Date): Promise<ScimUserRow> {
    const [row] = await this.sql.rows<ScimUserRow>(
      `INSERT INTO scim_users (organization_id, user_id, user_name, external_id, given_name, family_name, display_name, active, account_epoch, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING ${USER}`,
      [organizationId, userId, fields.userName, fields.externalId, fields.givenName, fields.familyName, fields.displayName, active, accountEpoch, now],
      tx,
    );
    return row!;
  }

  /**
   * What the organization's directory says of this account, in `tx`: 'deactivated' when it
   * provisioned the person and set them inactive; 'unclaimed' when it created the account and it is
   * still as made (active, the epoch it had then, no password, its address still the userName);
   * otherwise 'other' (linked an existing account, or the account changed since), or undefined when
   * the organization did not provision it.
   */
  async accountState(tx: Tx, organizationId: string, userId: string): Promise<'deactivated' | 'unclaimed' | 'other' | undefined> {
    const [row] = await this.sql.rows<{ state: 'deactivated' | 'unclaimed' | 'other' }>(
      `SELECT CASE WHEN NOT s.active THEN 'deactivated'
                   WHEN s.account_epoch = u.credential_epoch AND u.password_hash IS NULL AND lower(s.user_name) = lower(u.email) THEN 'unclaimed'
                   ELSE 'other' END AS state
         FROM scim_users s JOIN users u ON u.id = s.user_id
        WHERE s.organization_id = $1 AND s.user_id = $2`,
      [organizationId, userId],
      tx,
    );
    return row?.state;
  }

  /** The person of this SCIM id in the organization; `lock` takes the row's lock for the rest of `tx`. */
  async findUser(organizationId: string, id: string, tx?: Tx, lock = false): Promise<ScimUserRow | undefined> {
    if (!UUID.test(id)) return undefined;
    const [row] = await this.sql.rows<ScimUserRow>(
      `SELECT ${USER} FROM scim_users WHERE organization_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
      [organizationId, id],
      tx,
    );
    return row;
  }

  /** Whether another person of the organization has this userName (any case) or externalId. */
  async clash(tx: Tx, organizationId: string, userName: string, externalId: string | null, exceptId: string | null): Promise<'userName' | 'externalId' | undefined> {
    const [row] = await this.sql.rows<{ what: 'userName' | 'externalId' }>(
      `SELECT CASE WHEN lower(user_name) = lower($2) THEN 'userName' ELSE 'externalId' END AS what FROM scim_users
        WHERE organization_id = $1 AND (lower(user_name) = lower($2) OR ($3::text IS NOT NULL AND external_id = $3))
          AND ($4::uuid IS NULL OR id <> $4) LIMIT 1`,
      [organizationId, userName, externalId, exceptId],
      tx,
    );
    return row?.what;
  }

  async updateUser(tx: Tx, id: string, fields: Omit<ScimUserFields, 'userName'>, now: Date): Promise<void> {
    await this.sql.rows(
      `UPDATE scim_users SET external_id = $2, given_name = $3, family_name = $4, display_name = $5, updated_at = $6 WHERE id = $1`,
      [id, fields.externalId, fields.givenName, fields.familyName, fields.displayName, now],
      tx,
    );
  }

  /** `accountDisabledAt`: when this deactivation disabled the account (its `disabled_at`), null when it did not. */
  async setActive(tx: Tx, id: string, active: boolean, accountDisabledAt: Date | null, now: Date): Promise<void> {
    await this.sql.rows(
      `UPDATE scim_users SET active = $2, disabled_account = $3::timestamptz IS NOT NULL, account_disabled_at = $3, updated_at = $4 WHERE id = $1`,
      [id, active, accountDisabledAt, now],
      tx,
    );
  }

  async deleteUser(tx: Tx, id: string): Promise<void> {
    await this.sql.rows(`DELETE FROM scim_users WHERE id = $1`, [id], tx);
  }

  /** One page of the organization's people, oldest first, and how many match. */
  async listUsers(organizationId: string, query: ListQuery): Promise<{ rows: ScimUserRow[]; total: number }> {
    const { where, values } = this.where(USER_COLUMNS, organizationId, query);
    const [count] = await this.sql.rows<{ total: number }>(`SELECT count(*)::int AS total FROM scim_users WHERE ${where}`, values);
    const rows = query.limit === 0 ? [] : await this.sql.rows<ScimUserRow>(`SELECT ${USER} FROM scim_users WHERE ${where} ORDER BY created_at, id OFFSET ${query.offset} LIMIT ${query.limit}`, values);
    return { rows, total: count!.total };
  }

  /** The provisioned people of the organization, active ones only when asked (a new mapping's roles). */
  usersOf(tx: Tx, organizationId: string): Promise<ScimUserRow[]> {
    return this.sql.rows(`SELECT ${USER} FROM scim_users WHERE organization_id = $1 AND active ORDER BY id`, [organizationId], tx);
  }

  /** These SCIM ids of the organization's people that exist (a group's members must be its people). */
  async existingUsers(tx: Tx, organizationId: string, ids: readonly string[]): Promise<ScimUserRow[]> {
    if (!ids.length) return [];
    return this.sql.rows(`SELECT ${USER} FROM scim_users WHERE organization_id = $1 AND id = ANY($2::uuid[]) ORDER BY id`, [organizationId, ids], tx);
  }

  /**
   * The highest role the organization's mapping gives the person through their groups (`admin`
   * over `member`); `member` when none of their groups is mapped; undefined when the organization
   * maps no group at all (the directory then leaves roles to the admins).
   */
  async mappedRole(tx: Tx, organizationId: string, scimUserId: string): Promise<ScimGroupRole | undefined> {
    const [row] = await this.sql.rows<{ mapped: boolean; admin: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM scim_group_roles WHERE organization_id = $1) AS mapped,
              EXISTS (
         SELECT 1 FROM scim_group_members gm
           JOIN scim_groups g ON g.id = gm.group_id
           JOIN scim_group_roles r ON r.organization_id = g.organization_id AND lower(r.display_name) = lower(g.display_name)
          WHERE gm.scim_user_id = $2 AND g.organization_id = $1 AND r.role = 'admin') AS admin`,
      [organizationId, scimUserId],
      tx,
    );
    return !row!.mapped ? undefined : row!.admin ? 'admin' : 'member';
  }

  /** The group names and roles of the organization's mapping, by name. */
  groupRoles(organizationId: string, tx?: Tx): Promise<Array<{ group: string; role: ScimGroupRole }>> {
    return this.sql.rows(`SELECT display_name AS "group", role FROM scim_group_roles WHERE organization_id = $1 ORDER BY lower(display_name)`, [organizationId], tx);
  }

  async replaceGroupRoles(tx: Tx, organizationId: string, mapping: ReadonlyArray<{ group: string; role: ScimGroupRole }>): Promise<void> {
    await this.sql.rows(`DELETE FROM scim_group_roles WHERE organization_id = $1`, [organizationId], tx);
    if (!mapping.length) return;
    await this.sql.rows(
      `INSERT INTO scim_group_roles (organization_id, display_name, role) SELECT $1, g, r FROM unnest($2::text[], $3::text[]) AS m(g, r)
       ON CONFLICT (organization_id, display_name) DO UPDATE SET role = EXCLUDED.role`,
      [organizationId, mapping.map((m) => m.group), mapping.map((m) => m.role)],
      tx,
    );
  }

  /** Whether the person is a member of any organization, in `tx` (after a removal of that `tx`: the `organization_members` read of module-map.json). */
  async isMemberAnywhere(tx: Tx, userId: string): Promise<boolean> {
    return (await this.sql.rows(`SELECT 1 FROM organization_members WHERE user_id = $1 LIMIT 1`, [userId], tx)).length > 0;
  }

  // Groups

  async insertGroup(tx: Tx, organizationId: string, displayName: string, externalId: string | null, now: Date): Promise<ScimGroupRow | undefined> {
    const [row] = await this.sql.rows<ScimGroupRow>(
      `INSERT INTO scim_groups (organization_id, display_name, external_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
       ON CONFLICT DO NOTHING RETURNING ${GROUP}`,
      [organizationId, displayName, externalId, now],
      tx,
    );
    return row;
  }

  async findGroup(organizationId: string, id: string, tx?: Tx, lock = false): Promise<ScimGroupRow | undefined> {
    if (!UUID.test(id)) return undefined;
    const [row] = await this.sql.rows<ScimGroupRow>(`SELECT ${GROUP} FROM scim_groups WHERE organization_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [organizationId, id], tx);
    return row;
  }

  /** Renames a group (and sets its externalId); false when another group of the organization has the name. */
  async updateGroup(tx: Tx, id: string, displayName: string, externalId: string | null, now: Date): Promise<boolean> {
    const clash = await this.sql.rows(
      `SELECT 1 FROM scim_groups g, scim_groups me WHERE me.id = $1 AND g.organization_id = me.organization_id AND g.id <> me.id AND lower(g.display_name) = lower($2)`,
      [id, displayName],
      tx,
    );
    if (clash.length) return false;
    await this.sql.rows(`UPDATE scim_groups SET display_name = $2, external_id = $3, updated_at = $4 WHERE id = $1`, [id, displayName, externalId, now], tx);
    return true;
  }

  async deleteGroup(tx: Tx, id: string): Promise<void> {
    await this.sql.rows(`DELETE FROM scim_groups WHERE id = $1`, [id], tx);
  }

  /** One page of the organization's groups, oldest first, and how many match. */
  async listGroups(organizationId: string, query: ListQuery): Promise<{ rows: ScimGroupRow[]; total: number }> {
    const { where, values } = this.where(GROUP_COLUMNS, organizationId, query);
    const [count] = await this.sql.rows<{ total: number }>(`SELECT count(*)::int AS total FROM scim_groups WHERE ${where}`, values);
    const rows = query.limit === 0 ? [] : await this.sql.rows<ScimGroupRow>(`SELECT ${GROUP} FROM scim_groups WHERE ${where} ORDER BY created_at, id OFFSET ${query.offset} LIMIT ${query.limit}`, values);
    return { rows, total: count!.total };
  }

  /** The members of these groups, with their userName. */
  async membersOf(groupIds: readonly string[], tx?: Tx): Promise<GroupMemberRow[]> {
    if (!groupIds.length) return [];
    return this.sql.rows(
      `SELECT gm.group_id AS "groupId", gm.scim_user_id AS "scimUserId", u.user_name AS "userName"
         FROM scim_group_members gm JOIN scim_users u ON u.id = gm.scim_user_id
        WHERE gm.group_id = ANY($1::uuid[]) ORDER BY u.user_name`,
      [groupIds],
      tx,
    );
  }

  async addMembers(tx: Tx, groupId: string, scimUserIds: readonly string[]): Promise<number> {
    if (!scimUserIds.length) return 0;
    return this.sql.count(
      `INSERT INTO scim_group_members (group_id, scim_user_id) SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING`,
      [groupId, scimUserIds],
      tx,
    );
  }

  async removeMembers(tx: Tx, groupId: string, scimUserIds: readonly string[]): Promise<number> {
    if (!scimUserIds.length) return 0;
    return this.sql.count(`DELETE FROM scim_group_members WHERE group_id = $1 AND scim_user_id = ANY($2::uuid[])`, [groupId, scimUserIds], tx);
  }

  /** The condition of a list's filter on the organization's rows ($1) and its values; the column is one of `allowed`. */
  private where(allowed: Set<string>, organizationId: string, query: ListQuery): { where: string; values: unknown[] } {
    if (!query.where) return { where: 'organization_id = $1', values: [organizationId] };
    // The column comes from scim-filter.ts's own table of names, never from the request; checked again here.
    const { column, value, caseInsensitive } = query.where;
    if (!allowed.has(column)) throw new Error(`not a filterable column: ${column}`);
    const test = column === 'id' ? 'id::text = $2' : caseInsensitive ? `lower(${column}) = lower($2)` : `${column} = $2`;
    return { where: `organization_id = $1 AND ${test}`, values: [organizationId, value] };
  }
}
