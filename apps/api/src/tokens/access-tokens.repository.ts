import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { UserRole } from '../users/user.entity.js';
import type { TokenOrigin } from './access-token.entity.js';
import type { Tx } from '../database/tx.js';

/** An access token joined to its user, as verification reads it. */
export interface TokenForVerification {
  tokenId: string;
  expiresAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  user: { id: string; email: string; name: string; role: UserRole };
  /** The scope it was granted (or, made before scopes were stored on tokens, its grant's); null for such a token made directly, which has the CLI's. */
  scope: string | null;
  /** Its family, for a grant's token. */
  grantId: string | null;
  /** The grant that made it, for a token made with a bearer token. */
  mintedBy: Minter | null;
  /** An administrator disabled its user. */
  userDisabled: boolean;
  /** Its user is a service account (issue #45): no address, and only the routes that allow one. */
  serviceAccount: boolean;
  /**
   * When what it acts with was approved: its grant's approval (a refresh keeps it), else the grant or
   * token that minted it, else its own creation. Organizations compare it with a departure.
   */
  issuedAt: Date;
}

/** An access token as introspection and revocation see it (RFC 7662, RFC 7009). */
export interface AccessTokenDescription {
  id: string;
  userId: string;
  /** Null for a service account's token (issue #45). */
  email: string | null;
  /** Its family, for a token of a grant. */
  grantId: string | null;
  /** The OAuth client of its grant; null for a token created directly. */
  clientId: string | null;
  scope: string | null;
  createdAt: Date;
  expiresAt: Date;
  active: boolean;
}

/** The grant a token was made with: a token (made on the site or with a token), or a device login's session. */
export interface Minter {
  tokenId: string | null;
  grantId: string | null;
}

/** What the tokens page and /me say of the grant that made a token. */
export interface MinterDescription {
  /** A token: its label. */
  label?: string | null;
  /** A session: its client's registered name and the computer it is on. */
  clientName?: string;
  hostname?: string | null;
}

export interface TokenListing {
  id: string;
  label: string | null;
  origin: TokenOrigin;
  /** The grant that made it with a bearer token, described; null for one made on the site (or a device login's own). */
  mintedBy: MinterDescription | null;
  clientName: string | null;
  hostname: string | null;
  /** The program that started the device login that issued it. */
  userAgent: string | null;
  createdIp: string | null;
  createdAt: Date;
  expiresAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export interface NewAccessToken {
  tokenHash: Buffer;
  userId: string;
  origin: TokenOrigin;
  label: string | null;
  scope: string | null;
  grantId: string | null;
  mintedByTokenId: string | null;
  mintedByGrantId: string | null;
  mintedByFederationId: string | null;
  createdIp: string | null;
  createdAt: Date;
  expiresAt: Date;
}

/**
 * The statements on one access token: its insert, verification and its `last_used_at` write (the
 * hot path of every CLI call: named prepared statements on the pool, Sql), what the pages,
 * introspection and revocation read of it, and retention's purge. The locks and revocations of the
 * trees tokens form are AccessTokenTreesRepository's.
 */
@Injectable()
export class AccessTokensRepository {
  constructor(private readonly sql: Sql) {}

  /** The new token's id. */
  async insert(tx: Tx, token: NewAccessToken): Promise<string> {
    const [row] = await this.sql.rows<{ id: string }>(
      // issued_at: when what it acts with was approved (its grant's approval, else the grant or the
      // token that minted it), kept so that verification reads it without joins (migration 054).
      `INSERT INTO access_tokens (token_hash, user_id, origin, label, scope, grant_id, minted_by_token_id, minted_by_grant_id, minted_by_federation_id, created_ip, created_at, expires_at, issued_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
               COALESCE((SELECT created_at FROM grants WHERE id = $6), (SELECT created_at FROM grants WHERE id = $8),
                        (SELECT COALESCE(issued_at, created_at) FROM access_tokens WHERE id = $7)))
       RETURNING id`,
      [
        token.tokenHash,
        token.userId,
        token.origin,
        token.label,
        token.scope,
        token.grantId,
        token.mintedByTokenId,
        token.mintedByGrantId,
        token.mintedByFederationId,
        token.createdIp,
        token.createdAt,
        token.expiresAt,
      ],
      tx,
    );
    return row!.id;
  }

  async findForVerification(hash: Buffer): Promise<TokenForVerification | undefined> {
    const [row] = await this.sql.rows<{
      token_id: string;
      expires_at: Date;
      revoked_at: Date | null;
      last_used_at: Date | null;
      user_id: string;
      email: string | null;
      name: string;
      role: UserRole;
      scope: string | null;
      grant_id: string | null;
      minted_by_token_id: string | null;
      minted_by_grant_id: string | null;
      disabled: boolean;
      kind: string;
      issued_at: Date;
    }>(
      // The token's own scope first; only a token made before it had one reads its grant's.
      `SELECT t.id AS token_id, t.expires_at, t.revoked_at, t.last_used_at,
              u.id AS user_id, u.email, u.name, u.role, COALESCE(t.scope, g.scope) AS scope, u.disabled_at IS NOT NULL AS disabled, u.kind,
              t.grant_id, t.minted_by_token_id, t.minted_by_grant_id,
              COALESCE(t.issued_at, t.created_at) AS issued_at
         FROM access_tokens t JOIN users u ON u.id = t.user_id
         LEFT JOIN grants g ON g.id = t.grant_id AND t.scope IS NULL
        WHERE t.token_hash = $1`,
      [hash],
    );
    if (!row) return undefined;
    return {
      tokenId: row.token_id,
      expiresAt: row.expires_at,
      revokedAt: row.revoked_at,
      lastUsedAt: row.last_used_at,
      // A service account's email is null; the principal says so with `kind` (auth/auth-principal.ts).
      user: { id: row.user_id, email: row.email ?? '', name: row.name, role: row.role },
      scope: row.scope,
      grantId: row.grant_id,
      mintedBy: row.minted_by_token_id || row.minted_by_grant_id ? { tokenId: row.minted_by_token_id, grantId: row.minted_by_grant_id } : null,
      userDisabled: row.disabled,
      serviceAccount: row.kind === 'service_account',
      issuedAt: row.issued_at,
    };
  }

  /** Records use unless a use at or after `staleBefore` is recorded already. */
  async recordUse(tokenId: string, now: Date, staleBefore: Date): Promise<void> {
    await this.sql.rows(
      `UPDATE access_tokens SET last_used_at = $2
        WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`,
      [tokenId, now, staleBefore],
    );
  }

  async describe(hash: Buffer, now: Date): Promise<AccessTokenDescription | undefined> {
    const [row] = await this.sql.rows<AccessTokenDescription>(
      `SELECT t.id, t.user_id AS "userId", u.email, t.grant_id AS "grantId", g.client_id AS "clientId", COALESCE(t.scope, g.scope) AS scope,
              t.created_at AS "createdAt", t.expires_at AS "expiresAt", (t.revoked_at IS NULL AND t.expires_at > $2) AS active
         FROM access_tokens t JOIN users u ON u.id = t.user_id LEFT JOIN grants g ON g.id = t.grant_id
        WHERE t.token_hash = $1`,
      [hash, now],
    );
    return row;
  }

  /** The token of this user, with its family if it has one; undefined for another's or none. */
  async findOwned(tokenId: string, userId: string): Promise<{ grantId: string | null } | undefined> {
    const [owned] = await this.sql.rows<{ grantId: string | null }>(
      `SELECT grant_id AS "grantId" FROM access_tokens WHERE id = $1 AND user_id = $2`,
      [tokenId, userId],
    );
    return owned;
  }

  /** The grant that made a token, described for a person (/me); undefined when it is gone. */
  async describeMinter(minter: Minter): Promise<MinterDescription | undefined> {
    if (minter.grantId) {
      const [row] = await this.sql.rows<{ clientName: string; hostname: string | null }>(
        `SELECT c.name AS "clientName", d.hostname
           FROM grants g JOIN oauth_clients c ON c.id = g.client_id LEFT JOIN device_logins d ON d.grant_id = g.id
          WHERE g.id = $1`,
        [minter.grantId],
      );
      return row;
    }
    const [row] = await this.sql.rows<{ label: string | null }>(`SELECT label FROM access_tokens WHERE id = $1`, [minter.tokenId]);
    return row;
  }

  /**
   * The user's tokens, newest first, without secrets. A device session is one entry however
   * often it was refreshed: its newest access token, since when it is signed in, and until when
   * its refresh token keeps it alive. A token made with a bearer token says with which.
   */
  async listForUser(userId: string): Promise<TokenListing[]> {
    const rows = await this.sql.rows<Omit<TokenListing, 'mintedBy'> & { mintedByLabel: string | null; mintedByClient: string | null; mintedByHostname: string | null; minted: boolean }>(
      `SELECT * FROM (
         SELECT DISTINCT ON (COALESCE(t.grant_id, t.id))
                t.id, t.label, t.origin, d.client_name AS "clientName", d.hostname, d.user_agent AS "userAgent", t.created_ip AS "createdIp",
                COALESCE(d.redeemed_at, g.created_at, t.created_at) AS "createdAt",
                GREATEST(t.expires_at, r.expires_at) AS "expiresAt",
                GREATEST(t.last_used_at, CASE WHEN t.created_at > COALESCE(d.redeemed_at, g.created_at) THEN t.created_at END) AS "lastUsedAt",
                t.revoked_at AS "revokedAt",
                (t.minted_by_token_id IS NOT NULL OR t.minted_by_grant_id IS NOT NULL) AS minted,
                mt.label AS "mintedByLabel", mc.name AS "mintedByClient", md.hostname AS "mintedByHostname"
           FROM access_tokens t
           LEFT JOIN grants g ON g.id = t.grant_id
           LEFT JOIN device_logins d ON d.grant_id = g.id
           LEFT JOIN access_tokens mt ON mt.id = t.minted_by_token_id
           LEFT JOIN grants mg ON mg.id = t.minted_by_grant_id
           LEFT JOIN device_logins md ON md.grant_id = mg.id
           LEFT JOIN oauth_clients mc ON mc.id = mg.client_id
           LEFT JOIN LATERAL (
             SELECT max(expires_at) AS expires_at FROM refresh_tokens
              WHERE grant_id = t.grant_id AND revoked_at IS NULL AND rotated_at IS NULL
           ) r ON true
          WHERE t.user_id = $1
          ORDER BY COALESCE(t.grant_id, t.id), t.created_at DESC
       ) latest ORDER BY "createdAt" DESC, id`,
      [userId],
    );
    return rows.map(({ mintedByLabel, mintedByClient, mintedByHostname, minted, ...token }) => ({
      ...token,
      mintedBy: !minted ? null : mintedByClient !== null ? { clientName: mintedByClient, hostname: mintedByHostname } : { label: mintedByLabel },
    }));
  }

  /** At most `limit` tokens expired or revoked before `before` (retention); how many. */
  deleteEndedBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.sql.count(`DELETE FROM access_tokens WHERE id IN (SELECT id FROM access_tokens WHERE expires_at < $1 OR revoked_at < $1 LIMIT $2)`, [before, limit], tx);
  }
}
