import { Injectable } from '@nestjs/common';
import { auditInsert } from '../audit/audit-insert.sql-fragment.js';
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
  /** The scope it was granted (or, made before scopes were stored on tokens, its device login's); null for such a token made directly, which has the CLI's. */
  scope: string | null;
  /** Its family, for a device login's token. */
  deviceLoginId: string | null;
  /** The grant that made it, for a token made with a bearer token. */
  mintedBy: Minter | null;
  /** An administrator disabled its user. */
  userDisabled: boolean;
}

/** An access token as introspection and revocation see it (RFC 7662, RFC 7009). */
export interface AccessTokenDescription {
  id: string;
  userId: string;
  email: string;
  /** Its family, for a token of a device login. */
  deviceLoginId: string | null;
  /** The OAuth client of its device login; null for a token created directly. */
  clientId: string | null;
  scope: string | null;
  createdAt: Date;
  expiresAt: Date;
  active: boolean;
}

/** The grant a token was made with: a token (made on the site or with a token), or a device login's session. */
export interface Minter {
  tokenId: string | null;
  deviceLoginId: string | null;
}

/** A minter as it stands under its tree's lock: what the token it makes may have at most. */
export interface MinterState {
  live: boolean;
  expiresAt: Date;
  /** A device login's token: the absolute end of its family while a refresh token of it lives, else null. */
  familyExpiresAt: Date | null;
  /** A device login's token: the end of its grant's `admin`. */
  adminUntil: Date | null;
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
  deviceLoginId: string | null;
  mintedByTokenId: string | null;
  mintedByDeviceLoginId: string | null;
  createdIp: string | null;
  createdAt: Date;
  expiresAt: Date;
}

/**
 * Every statement on `access_tokens`, and the revocations of a family (a device login's access
 * and refresh tokens), which are one statement across both tables with their audit event.
 * Verification and its `last_used_at` write are the hot path of every CLI call: named prepared
 * statements on the pool (Sql); the rest runs in its caller's transaction.
 */
@Injectable()
export class AccessTokensRepository {
  constructor(private readonly sql: Sql) {}

  /** The new token's id. */
  async insert(tx: Tx, token: NewAccessToken): Promise<string> {
    const [row] = await this.sql.rows<{ id: string }>(
      `INSERT INTO access_tokens (token_hash, user_id, origin, label, scope, device_login_id, minted_by_token_id, minted_by_device_login_id, created_ip, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`,
      [
        token.tokenHash,
        token.userId,
        token.origin,
        token.label,
        token.scope,
        token.deviceLoginId,
        token.mintedByTokenId,
        token.mintedByDeviceLoginId,
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
      email: string;
      name: string;
      role: UserRole;
      scope: string | null;
      device_login_id: string | null;
      minted_by_token_id: string | null;
      minted_by_device_login_id: string | null;
      disabled: boolean;
    }>(
      // The token's own scope first; only a token made before it had one reads its device login's.
      `SELECT t.id AS token_id, t.expires_at, t.revoked_at, t.last_used_at,
              u.id AS user_id, u.email, u.name, u.role, COALESCE(t.scope, d.scope) AS scope, u.disabled_at IS NOT NULL AS disabled,
              t.device_login_id, t.minted_by_token_id, t.minted_by_device_login_id
         FROM access_tokens t JOIN users u ON u.id = t.user_id
         LEFT JOIN device_logins d ON d.id = t.device_login_id AND t.scope IS NULL
        WHERE t.token_hash = $1`,
      [hash],
    );
    if (!row) return undefined;
    return {
      tokenId: row.token_id,
      expiresAt: row.expires_at,
      revokedAt: row.revoked_at,
      lastUsedAt: row.last_used_at,
      user: { id: row.user_id, email: row.email, name: row.name, role: row.role },
      scope: row.scope,
      deviceLoginId: row.device_login_id,
      mintedBy: row.minted_by_token_id || row.minted_by_device_login_id ? { tokenId: row.minted_by_token_id, deviceLoginId: row.minted_by_device_login_id } : null,
      userDisabled: row.disabled,
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
      `SELECT t.id, t.user_id AS "userId", u.email, t.device_login_id AS "deviceLoginId", d.client_id AS "clientId", COALESCE(t.scope, d.scope) AS scope,
              t.created_at AS "createdAt", t.expires_at AS "expiresAt", (t.revoked_at IS NULL AND t.expires_at > $2) AS active
         FROM access_tokens t JOIN users u ON u.id = t.user_id LEFT JOIN device_logins d ON d.id = t.device_login_id
        WHERE t.token_hash = $1`,
      [hash, now],
    );
    return row;
  }

  /** The token of this user, with its family if it has one; undefined for another's or none. */
  async findOwned(tokenId: string, userId: string): Promise<{ deviceLoginId: string | null } | undefined> {
    const [owned] = await this.sql.rows<{ deviceLoginId: string | null }>(
      `SELECT device_login_id AS "deviceLoginId" FROM access_tokens WHERE id = $1 AND user_id = $2`,
      [tokenId, userId],
    );
    return owned;
  }

  /**
   * The lock of the minting tree a token belongs to: its root, which is a device login (the
   * family's row, which rotations and family revocations take too) or a token made on the site.
   * Everything that makes a token with a token, or revokes one, takes it first, so a token being
   * made is either committed before a revocation looks (and revoked with the rest) or made after
   * it (and then finds its minter revoked). False when there is no such token.
   */
  async lockTreeOf(tx: Tx, tokenId: string): Promise<boolean> {
    const [root] = await this.sql.rows<{ family: string | null; token_id: string | null }>(
      `WITH RECURSIVE up AS (
         SELECT id, minted_by_token_id, COALESCE(device_login_id, minted_by_device_login_id) AS family FROM access_tokens WHERE id = $1
         UNION ALL
         SELECT t.id, t.minted_by_token_id, COALESCE(t.device_login_id, t.minted_by_device_login_id) FROM access_tokens t JOIN up ON t.id = up.minted_by_token_id
       )
       SELECT family, CASE WHEN family IS NULL THEN id END AS token_id FROM up WHERE minted_by_token_id IS NULL`,
      [tokenId],
      tx,
    );
    if (!root) return false;
    if (root.family) await this.lockFamily(tx, root.family);
    else await this.sql.rows(`SELECT id FROM access_tokens WHERE id = $1 FOR UPDATE`, [root.token_id], tx);
    return true;
  }

  /** A minter as it is now (read under its tree's lock, lockTreeOf); undefined for none. */
  async minterState(tx: Tx, tokenId: string, now: Date): Promise<MinterState | undefined> {
    const [row] = await this.sql.rows<{ live: boolean; expires_at: Date; family_expires_at: Date | null; admin_until: Date | null }>(
      `SELECT t.revoked_at IS NULL AND t.expires_at > $2 AS live, t.expires_at, d.admin_until,
              (SELECT max(r.family_expires_at) FROM refresh_tokens r
                WHERE r.device_login_id = t.device_login_id AND r.revoked_at IS NULL AND r.expires_at > $2) AS family_expires_at
         FROM access_tokens t LEFT JOIN device_logins d ON d.id = t.device_login_id
        WHERE t.id = $1`,
      [tokenId, now],
      tx,
    );
    return row && { live: row.live, expiresAt: row.expires_at, familyExpiresAt: row.family_expires_at, adminUntil: row.admin_until };
  }

  /** The grant that made a token, described for a person (/me); undefined when it is gone. */
  async describeMinter(minter: Minter): Promise<MinterDescription | undefined> {
    if (minter.deviceLoginId) {
      const [row] = await this.sql.rows<{ clientName: string; hostname: string | null }>(
        `SELECT c.name AS "clientName", d.hostname FROM device_logins d JOIN oauth_clients c ON c.id = d.client_id WHERE d.id = $1`,
        [minter.deviceLoginId],
      );
      return row;
    }
    const [row] = await this.sql.rows<{ label: string | null }>(`SELECT label FROM access_tokens WHERE id = $1`, [minter.tokenId]);
    return row;
  }

  /**
   * Revokes one token with every token made with it, recursively (whoever they belong to), and
   * records each, in one statement; of racing revocations only the first does (and is audited).
   * Run under its tree's lock (lockTreeOf). The ids it revoked: none when it was revoked already.
   */
  async revokeOne(tx: Tx, tokenId: string, userId: string, now: Date, ip: string | null): Promise<string[]> {
    const [row] = await this.sql.rows<{ ids: string[] }>(
      `WITH RECURSIVE minted AS (
         SELECT id FROM access_tokens WHERE minted_by_token_id = $1
         UNION
         SELECT t.id FROM access_tokens t JOIN minted ON t.minted_by_token_id = minted.id
       ), revoked AS (
         UPDATE access_tokens SET revoked_at = $3 WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING id
       ), cascaded AS (
         UPDATE access_tokens SET revoked_at = $3
          WHERE id IN (SELECT id FROM minted) AND revoked_at IS NULL AND EXISTS (SELECT 1 FROM revoked) RETURNING id, user_id
       ), events AS (
         ${auditInsert([
           {
             type: 'token.revoke',
             userId: '$2',
             ip: '$4',
             detail: "jsonb_build_object('tokenId', revoked.id) || CASE WHEN EXISTS (SELECT 1 FROM cascaded) THEN jsonb_build_object('mintedTokens', (SELECT count(*) FROM cascaded)) ELSE '{}' END",
             createdAt: '$3',
             from: 'revoked',
           },
           {
             type: 'token.revoke',
             userId: 'cascaded.user_id',
             ip: '$4',
             detail: "jsonb_build_object('tokenId', cascaded.id, 'reason', 'the token it was made with was revoked')",
             createdAt: '$3',
             from: 'cascaded',
           },
         ])}
       )
       SELECT ARRAY(SELECT id FROM revoked UNION ALL SELECT id FROM cascaded) AS ids`,
      [tokenId, userId, now, ip],
      tx,
    );
    return row?.ids ?? [];
  }

  /**
   * The family's lock: its device login row. A rotation (RefreshTokensRepository), a token made
   * with one of its tokens, and every revocation take it first, so a pair or a token being written
   * is committed before a revocation looks.
   */
  async lockFamily(tx: Tx, deviceLoginId: string): Promise<void> {
    await this.sql.rows(`SELECT id FROM device_logins WHERE id = $1 FOR UPDATE`, [deviceLoginId], tx);
  }

  /**
   * Revokes every live access token of a family, and every token made with the family's tokens
   * (recursively, whoever they belong to), with one audit event per made token, in one statement,
   * in `tx` under the family's lock (its refresh tokens and the family's own event are the
   * caller's next statements: TokensService.revokeFamily). The ids it revoked, how many were the
   * family's own and how many made with them, and who decided the family; undefined for no family.
   */
  async revokeFamilyAccess(
    tx: Tx,
    deviceLoginId: string,
    now: Date,
    ip: string | null,
  ): Promise<{ ids: string[]; own: number; minted: number; decidedBy: string | null } | undefined> {
    const [row] = await this.sql.rows<{ ids: string[]; own: number; minted: number; decidedBy: string | null }>(
      `WITH RECURSIVE minted AS (
         SELECT id FROM access_tokens WHERE minted_by_device_login_id = $1
         UNION
         SELECT t.id FROM access_tokens t JOIN minted ON t.minted_by_token_id = minted.id
       ), a AS (
         UPDATE access_tokens SET revoked_at = $2 WHERE device_login_id = $1 AND revoked_at IS NULL RETURNING id
       ), m AS (
         UPDATE access_tokens SET revoked_at = $2 WHERE id IN (SELECT id FROM minted) AND revoked_at IS NULL RETURNING id, user_id
       ), minted_events AS (
         ${auditInsert({
           type: 'token.revoke',
           userId: 'm.user_id',
           ip: '$3',
           detail: "jsonb_build_object('tokenId', m.id, 'reason', 'the session it was made with was revoked')",
           createdAt: '$2',
           from: 'm',
         })}
       )
       SELECT ARRAY(SELECT id FROM a UNION ALL SELECT id FROM m) AS ids, (SELECT count(*)::int FROM a) AS own, (SELECT count(*)::int FROM m) AS minted,
              d.decided_by_user_id AS "decidedBy"
         FROM device_logins d WHERE d.id = $1`,
      [deviceLoginId, now, ip],
      tx,
    );
    return row;
  }

  /**
   * Locks, in a fixed order (families, then tokens, each by id), every family and minting tree
   * the user's live tokens belong to, and every family of theirs with a live refresh token or a
   * live token made with it: what revokeAllOfUser ends, so no rotation or token being made slips past.
   */
  async lockFamiliesOfUser(tx: Tx, userId: string, now: Date): Promise<void> {
    const roots = `WITH RECURSIVE up AS (
         SELECT id, minted_by_token_id, COALESCE(device_login_id, minted_by_device_login_id) AS family
           FROM access_tokens WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2
         UNION
         SELECT t.id, t.minted_by_token_id, COALESCE(t.device_login_id, t.minted_by_device_login_id)
           FROM access_tokens t JOIN up ON t.id = up.minted_by_token_id
       ), roots AS (SELECT id, family FROM up WHERE minted_by_token_id IS NULL)`;
    await this.sql.rows(
      `${roots}
       SELECT id FROM device_logins WHERE id IN (
         SELECT family FROM roots WHERE family IS NOT NULL
         UNION SELECT device_login_id FROM refresh_tokens WHERE user_id = $1 AND revoked_at IS NULL
         UNION SELECT m.minted_by_device_login_id FROM access_tokens m JOIN device_logins d ON d.id = m.minted_by_device_login_id
                WHERE d.decided_by_user_id = $1 AND m.revoked_at IS NULL AND m.expires_at > $2
       ) ORDER BY id FOR UPDATE`,
      [userId, now],
      tx,
    );
    await this.sql.rows(`${roots} SELECT id FROM access_tokens WHERE id IN (SELECT id FROM roots WHERE family IS NULL) ORDER BY id FOR UPDATE`, [userId, now], tx);
  }

  /**
   * Revokes, in `tx`, every live access token of the user and every live token made with theirs
   * (recursively: another person's, made by this one as an administrator), with one audit event
   * per long-lived token of theirs and one per made token of someone else, in one statement (their
   * refresh tokens, uncollected approvals and the sessions' events are the caller's next
   * statements: TokensService.revokeEverythingOfUserIn). How many events it recorded of the user's
   * own, the sessions (device logins) of the tokens it revoked, and the ids of the other people's
   * tokens it revoked (their owners' caches are not the user's).
   */
  async revokeAllAccessOfUser(tx: Tx, userId: string, now: Date, ip: string | null): Promise<{ ended: number; sessions: string[]; othersTokens: string[] }> {
    const [row] = await this.sql.rows<{ ended: number; sessions: string[]; others: string[] }>(
      `WITH RECURSIVE minted AS (
         SELECT m.id FROM access_tokens p JOIN access_tokens m ON m.minted_by_token_id = p.id WHERE p.user_id = $1
         UNION
         SELECT m.id FROM access_tokens m JOIN device_logins d ON d.id = m.minted_by_device_login_id WHERE d.decided_by_user_id = $1
         UNION
         SELECT t.id FROM access_tokens t JOIN minted ON t.minted_by_token_id = minted.id
       ), a AS (
         UPDATE access_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 RETURNING id, device_login_id
       ), o AS (
         UPDATE access_tokens SET revoked_at = $2
          WHERE id IN (SELECT id FROM minted) AND user_id <> $1 AND revoked_at IS NULL AND expires_at > $2 RETURNING id, user_id
       ), events AS (
         ${auditInsert(
           {
             type: 'token.revoke',
             userId: '$1',
             ip: '$3',
             detail: "jsonb_build_object('tokenId', a.id, 'reason', 'signed out everywhere')",
             createdAt: '$2',
             from: 'a WHERE a.device_login_id IS NULL',
           },
           '1',
         )}
       ), others_events AS (
         ${auditInsert({
           type: 'token.revoke',
           userId: 'o.user_id',
           ip: '$3',
           detail: "jsonb_build_object('tokenId', o.id, 'reason', 'the person who made it signed out everywhere')",
           createdAt: '$2',
           from: 'o',
         })}
       )
       SELECT (SELECT count(*)::int FROM events) AS ended,
              ARRAY(SELECT DISTINCT device_login_id FROM a WHERE device_login_id IS NOT NULL) AS sessions,
              ARRAY(SELECT id FROM o) AS others`,
      [userId, now, ip],
      tx,
    );
    return { ended: row!.ended, sessions: row!.sessions, othersTokens: row!.others };
  }

  /**
   * The user's tokens, newest first, without secrets. A device session is one entry however
   * often it was refreshed: its newest access token, since when it is signed in, and until when
   * its refresh token keeps it alive. A token made with a bearer token says with which.
   */
  async listForUser(userId: string): Promise<TokenListing[]> {
    const rows = await this.sql.rows<Omit<TokenListing, 'mintedBy'> & { mintedByLabel: string | null; mintedByClient: string | null; mintedByHostname: string | null; minted: boolean }>(
      `SELECT * FROM (
         SELECT DISTINCT ON (COALESCE(t.device_login_id, t.id))
                t.id, t.label, t.origin, d.client_name AS "clientName", d.hostname, d.user_agent AS "userAgent", t.created_ip AS "createdIp",
                COALESCE(d.redeemed_at, t.created_at) AS "createdAt",
                GREATEST(t.expires_at, r.expires_at) AS "expiresAt",
                GREATEST(t.last_used_at, CASE WHEN t.created_at > d.redeemed_at THEN t.created_at END) AS "lastUsedAt",
                t.revoked_at AS "revokedAt",
                (t.minted_by_token_id IS NOT NULL OR t.minted_by_device_login_id IS NOT NULL) AS minted,
                mt.label AS "mintedByLabel", mc.name AS "mintedByClient", md.hostname AS "mintedByHostname"
           FROM access_tokens t
           LEFT JOIN device_logins d ON d.id = t.device_login_id
           LEFT JOIN access_tokens mt ON mt.id = t.minted_by_token_id
           LEFT JOIN device_logins md ON md.id = t.minted_by_device_login_id
           LEFT JOIN oauth_clients mc ON mc.id = md.client_id
           LEFT JOIN LATERAL (
             SELECT max(expires_at) AS expires_at FROM refresh_tokens
              WHERE device_login_id = t.device_login_id AND revoked_at IS NULL AND rotated_at IS NULL
           ) r ON true
          WHERE t.user_id = $1
          ORDER BY COALESCE(t.device_login_id, t.id), t.created_at DESC
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
