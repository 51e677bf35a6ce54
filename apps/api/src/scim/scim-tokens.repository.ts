import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

export interface ScimTokenRow {
  id: string;
  label: string;
  createdAt: Date;
  createdBy: string | null;
  lastUsedAt: Date | null;
}

/** The organization a working token acts for. */
export interface ScimTokenOwner {
  tokenId: string;
  organizationId: string;
  slug: string;
  name: string;
  /** Who made the token: it acts with their standing, read again where it matters (an owner's removal). */
  makerId: string;
}

/** Every statement on `scim_tokens`. */
@Injectable()
export class ScimTokensRepository {
  constructor(private readonly sql: Sql) {}

  async insert(tx: Tx, organizationId: string, tokenHash: Buffer, label: string, userId: string, now: Date): Promise<ScimTokenRow> {
    const [row] = await this.sql.rows<ScimTokenRow>(
      `INSERT INTO scim_tokens (organization_id, token_hash, label, created_by_user_id, created_at) VALUES ($1, $2, $3, $4, $5)
       RETURNING id, label, created_at AS "createdAt", NULL AS "createdBy", last_used_at AS "lastUsedAt"`,
      [organizationId, tokenHash, label, userId, now],
      tx,
    );
    return row!;
  }

  async count(tx: Tx, organizationId: string): Promise<number> {
    const [row] = await this.sql.rows<{ n: number }>(`SELECT count(*)::int AS n FROM scim_tokens WHERE organization_id = $1`, [organizationId], tx);
    return row!.n;
  }

  /** The organization's tokens, newest first, with their maker's address (the `users` read of module-map.json). */
  list(organizationId: string): Promise<ScimTokenRow[]> {
    return this.sql.rows(
      `SELECT t.id, t.label, t.created_at AS "createdAt", u.email AS "createdBy", t.last_used_at AS "lastUsedAt"
         FROM scim_tokens t LEFT JOIN users u ON u.id = t.created_by_user_id
        WHERE t.organization_id = $1 ORDER BY t.created_at DESC, t.id`,
      [organizationId],
    );
  }

  async delete(tx: Tx, organizationId: string, id: string): Promise<{ label: string } | undefined> {
    const [row] = await this.sql.rows<{ label: string }>(`DELETE FROM scim_tokens WHERE organization_id = $1 AND id = $2 RETURNING label`, [organizationId, id], tx);
    return row;
  }

  /**
   * The organization of `slug` when `tokenHash` is one of its tokens and the token still works: its
   * maker is still an admin or owner of the organization and their account is enabled (a token ends
   * with the standing it was made under). Records the use, at most once a minute, in the same statement.
   */
  async use(tokenHash: Buffer, slug: string, now: Date): Promise<ScimTokenOwner | undefined> {
    const [row] = await this.sql.rows<ScimTokenOwner>(
      `WITH found AS (
         SELECT t.id, t.last_used_at, t.created_by_user_id AS maker_id, o.id AS organization_id, o.slug, o.name
           FROM scim_tokens t
           JOIN organizations o ON o.id = t.organization_id AND o.slug = $2
           JOIN organization_members m ON m.organization_id = t.organization_id AND m.user_id = t.created_by_user_id AND m.role IN ('admin', 'owner')
           JOIN users u ON u.id = t.created_by_user_id AND u.disabled_at IS NULL
          WHERE t.token_hash = $1
       ), touched AS (
         UPDATE scim_tokens t SET last_used_at = $3 FROM found
          WHERE t.id = found.id AND (found.last_used_at IS NULL OR found.last_used_at < $3::timestamptz - interval '1 minute')
       )
       SELECT id AS "tokenId", organization_id AS "organizationId", slug, name, maker_id AS "makerId" FROM found`,
      [tokenHash, slug, now],
    );
    return row;
  }
}
