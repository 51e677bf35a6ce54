import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { RefreshToken } from './refresh-token.entity.js';
import type { Tx } from '../database/tx.js';

/** A presented refresh token with its family, client and user, as the claim returns it. */
export interface FamilyRow {
  id: string;
  parent_id: string | null;
  grant_id: string;
  user_id: string;
  family_expires_at: Date;
  client_id: string;
  scope: string;
  /** When the grant's `admin` ends (ADMIN_GRANT_SECONDS after its approval); null if it has none. */
  admin_until: Date | null;
  client_name: string | null;
  hostname: string | null;
  email: string;
  name: string;
}

/** A presented refresh token that could not be claimed, with the state of its successor. */
export interface PresentedRow extends FamilyRow {
  expires_at: Date;
  rotated_at: Date | null;
  revoked_at: Date | null;
  successor_sealed: Buffer | null;
  successor_id: string | null;
  successor_rotated_at: Date | null;
  successor_expires_at: Date | null;
}

export interface RefreshTokenDescription {
  familyId: string;
  userId: string;
  email: string;
  clientId: string;
  scope: string | null;
  createdAt: Date;
  expiresAt: Date;
  active: boolean;
}

export type NewRefreshToken = Pick<RefreshToken, 'tokenHash' | 'grantId' | 'userId' | 'createdAt' | 'expiresAt' | 'familyExpiresAt' | 'parentId'>;

/** The columns both the claim and the second look read: the token, its family, client and user. */
const FAMILY_COLUMNS = `r.id, r.parent_id, r.grant_id, r.user_id, r.family_expires_at, g.client_id, g.scope, g.admin_until,
  COALESCE(d.client_name, c.name) AS client_name, d.hostname, u.email, u.name`;

/** Every statement on `refresh_tokens`. A rotation runs them in one transaction under the family's lock. */
@Injectable()
export class RefreshTokensRepository {
  constructor(private readonly sql: Sql) {}

  async insert(tx: Tx, token: NewRefreshToken): Promise<void> {
    await this.sql.rows(
      `INSERT INTO refresh_tokens (token_hash, grant_id, user_id, created_at, expires_at, family_expires_at, parent_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [token.tokenHash, token.grantId, token.userId, token.createdAt, token.expiresAt, token.familyExpiresAt, token.parentId],
      tx,
    );
  }

  /** Marks a live, unrotated token of this client as rotated, in one conditional statement; undefined if it is not one. */
  async claim(tx: Tx, hash: Buffer, now: Date, clientId: string): Promise<FamilyRow | undefined> {
    const [claimed] = await this.sql.rows<FamilyRow>(
      `UPDATE refresh_tokens r SET rotated_at = $2
         FROM grants g JOIN oauth_clients c ON c.id = g.client_id LEFT JOIN device_logins d ON d.grant_id = g.id, users u
        WHERE r.token_hash = $1 AND r.rotated_at IS NULL AND r.revoked_at IS NULL AND r.expires_at > $2
          AND g.id = r.grant_id AND g.client_id = $3 AND u.id = r.user_id
        RETURNING ${FAMILY_COLUMNS}`,
      [hash, now, clientId],
      tx,
    );
    return claimed;
  }

  /** A token that could not be claimed, with its family and its successor's state. */
  async findPresented(tx: Tx, hash: Buffer): Promise<PresentedRow | undefined> {
    const [row] = await this.sql.rows<PresentedRow>(
      `SELECT ${FAMILY_COLUMNS}, r.expires_at, r.rotated_at, r.revoked_at, r.successor_sealed,
              s.id AS successor_id, s.rotated_at AS successor_rotated_at, s.expires_at AS successor_expires_at
         FROM refresh_tokens r
         JOIN grants g ON g.id = r.grant_id JOIN oauth_clients c ON c.id = g.client_id LEFT JOIN device_logins d ON d.grant_id = g.id
         JOIN users u ON u.id = r.user_id
         LEFT JOIN refresh_tokens s ON s.parent_id = r.id
        WHERE r.token_hash = $1`,
      [hash],
      tx,
    );
    return row;
  }

  /** Keeps (or, with null, forgets) the successor pair sealed under this token. */
  async setSealedSuccessor(tx: Tx, id: string, sealed: Buffer | null): Promise<void> {
    await this.sql.rows(`UPDATE refresh_tokens SET successor_sealed = $2 WHERE id = $1`, [id, sealed], tx);
  }

  /**
   * A sealed successor is erased when the successor is used or the family revoked (in that
   * transaction); what is left is the pair of a token rotated before `before` (its replay window over).
   */
  async eraseSealedSuccessorsRotatedBefore(before: Date): Promise<void> {
    await this.sql.rows(`UPDATE refresh_tokens SET successor_sealed = NULL WHERE successor_sealed IS NOT NULL AND rotated_at <= $1`, [before]);
  }

  /** A refresh token's family, with the scope its next access token would carry (`admin` only while its grant's lasts). */
  async describe(hash: Buffer, now: Date): Promise<RefreshTokenDescription | undefined> {
    const [row] = await this.sql.rows<RefreshTokenDescription>(
      `SELECT r.grant_id AS "familyId", r.user_id AS "userId", u.email, g.client_id AS "clientId",
              array_to_string(array_remove(string_to_array(g.scope, ' '), CASE WHEN g.admin_until > $2 THEN NULL ELSE 'admin' END), ' ') AS scope,
              r.created_at AS "createdAt", r.expires_at AS "expiresAt",
              (r.revoked_at IS NULL AND r.rotated_at IS NULL AND r.expires_at > $2) AS active
         FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id JOIN users u ON u.id = r.user_id
        WHERE r.token_hash = $1`,
      [hash, now],
    );
    return row;
  }

  /** Revokes, in `tx`, the live refresh tokens of a family (its successor answer forgotten); how many. */
  revokeOfFamily(tx: Tx, grantId: string, now: Date): Promise<number> {
    return this.sql.count(`UPDATE refresh_tokens SET revoked_at = $2, successor_sealed = NULL WHERE grant_id = $1 AND revoked_at IS NULL`, [grantId, now], tx);
  }

  /** Revokes, in `tx`, every live refresh token of the person; the family of each. */
  async revokeAllOfUser(tx: Tx, userId: string, now: Date): Promise<string[]> {
    const rows = await this.sql.rows<{ grantId: string }>(
      `UPDATE refresh_tokens SET revoked_at = $2, successor_sealed = NULL WHERE user_id = $1 AND revoked_at IS NULL RETURNING grant_id AS "grantId"`,
      [userId, now],
      tx,
    );
    return rows.map((row) => row.grantId);
  }

  /** At most `limit` tokens expired or revoked before `before` (retention); how many. */
  deleteEndedBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.sql.count(`DELETE FROM refresh_tokens WHERE id IN (SELECT id FROM refresh_tokens WHERE expires_at < $1 OR revoked_at < $1 LIMIT $2)`, [before, limit], tx);
  }
}
