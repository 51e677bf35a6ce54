import { Injectable } from '@nestjs/common';
import { auditInsert, requestUserAgent } from '../audit/audit-insert.sql-fragment.js';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';
import { GrantsService } from '../grants/grants.service.js';

/** A minter as it stands under its tree's lock: what the token it makes may have at most. */
export interface MinterState {
  live: boolean;
  expiresAt: Date;
  /** A grant's token: the absolute end of its family while a refresh token of it lives, else null. */
  familyExpiresAt: Date | null;
  /** A grant's token: the end of its grant's `admin`. */
  adminUntil: Date | null;
}

/**
 * The trees access tokens form and their revocations: a grant's family (its access and
 * refresh tokens) and the tokens made with a token, each locked at its root before a token is made
 * in it or any of it is revoked. A revocation is one statement with its audit events, in the
 * caller's transaction under that lock.
 */
@Injectable()
export class AccessTokenTreesRepository {
  constructor(
    private readonly sql: Sql,
    private readonly grants: GrantsService,
  ) {}

  /**
   * The lock of the minting tree a token belongs to: its root, which is a grant (the
   * family's row, which rotations and family revocations take too) or a token made on the site.
   * Everything that makes a token with a token, or revokes one, takes it first, so a token being
   * made is either committed before a revocation looks (and revoked with the rest) or made after
   * it (and then finds its minter revoked). The grant at the root (null for a tree made on the
   * site), undefined when there is no such token.
   */
  async lockTreeOf(tx: Tx, tokenId: string): Promise<{ grantId: string | null } | undefined> {
    const [root] = await this.sql.rows<{ family: string | null; token_id: string | null }>(
      `WITH RECURSIVE up AS (
         SELECT id, minted_by_token_id, COALESCE(grant_id, minted_by_grant_id) AS family FROM access_tokens WHERE id = $1
         UNION ALL
         SELECT t.id, t.minted_by_token_id, COALESCE(t.grant_id, t.minted_by_grant_id) FROM access_tokens t JOIN up ON t.id = up.minted_by_token_id
       )
       SELECT family, CASE WHEN family IS NULL THEN id END AS token_id FROM up WHERE minted_by_token_id IS NULL`,
      [tokenId],
      tx,
    );
    if (!root) return undefined;
    if (root.family) await this.lockFamily(tx, root.family);
    else await this.sql.rows(`SELECT id FROM access_tokens WHERE id = $1 FOR UPDATE`, [root.token_id], tx);
    return { grantId: root.family };
  }

  /** A minter as it is now (read under its tree's lock, lockTreeOf); undefined for none. */
  async minterState(tx: Tx, tokenId: string, now: Date): Promise<MinterState | undefined> {
    const [row] = await this.sql.rows<{ live: boolean; expires_at: Date; family_expires_at: Date | null; admin_until: Date | null }>(
      `SELECT t.revoked_at IS NULL AND t.expires_at > $2 AS live, t.expires_at, g.admin_until,
              (SELECT max(r.family_expires_at) FROM refresh_tokens r
                WHERE r.grant_id = t.grant_id AND r.revoked_at IS NULL AND r.expires_at > $2) AS family_expires_at
         FROM access_tokens t LEFT JOIN grants g ON g.id = t.grant_id
        WHERE t.id = $1`,
      [tokenId, now],
      tx,
    );
    return row && { live: row.live, expiresAt: row.expires_at, familyExpiresAt: row.family_expires_at, adminUntil: row.admin_until };
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
             userAgent: '$5',
             detail: "jsonb_build_object('tokenId', revoked.id) || CASE WHEN EXISTS (SELECT 1 FROM cascaded) THEN jsonb_build_object('mintedTokens', (SELECT count(*) FROM cascaded)) ELSE '{}' END",
             createdAt: '$3',
             from: 'revoked',
           },
           {
             type: 'token.revoke',
             userId: 'cascaded.user_id',
             ip: '$4',
             userAgent: '$5',
             detail: "jsonb_build_object('tokenId', cascaded.id, 'reason', 'the token it was made with was revoked')",
             createdAt: '$3',
             from: 'cascaded',
           },
         ])}
       )
       SELECT ARRAY(SELECT id FROM revoked UNION ALL SELECT id FROM cascaded) AS ids`,
      [tokenId, userId, now, ip, requestUserAgent()],
      tx,
    );
    return row?.ids ?? [];
  }

  /**
   * The family's lock: its grant's row (grants/'s GrantsService.lockForIssue, which rotations and
   * redemptions take too). A token made with one of its tokens and every revocation take it first,
   * so a pair or a token being written is committed before a revocation looks.
   */
  async lockFamily(tx: Tx, grantId: string): Promise<void> {
    await this.grants.lockAll(tx, [grantId]);
  }

  /**
   * Revokes every live access token of a family, and every token made with the family's tokens
   * (recursively, whoever they belong to), with one audit event per made token, in one statement,
   * in `tx` under the family's lock (its refresh tokens and the family's own event are the
   * caller's next statements: TokenRevoker.revokeFamily). The ids it revoked, how many were the
   * family's own and how many made with them, and who decided the family; undefined for no family.
   */
  async revokeFamilyAccess(
    tx: Tx,
    grantId: string,
    now: Date,
    ip: string | null,
  ): Promise<{ ids: string[]; own: number; minted: number; decidedBy: string | null } | undefined> {
    const [row] = await this.sql.rows<{ ids: string[]; own: number; minted: number; decidedBy: string | null }>(
      `WITH RECURSIVE minted AS (
         SELECT id FROM access_tokens WHERE minted_by_grant_id = $1
         UNION
         SELECT t.id FROM access_tokens t JOIN minted ON t.minted_by_token_id = minted.id
       ), a AS (
         UPDATE access_tokens SET revoked_at = $2 WHERE grant_id = $1 AND revoked_at IS NULL RETURNING id
       ), m AS (
         UPDATE access_tokens SET revoked_at = $2 WHERE id IN (SELECT id FROM minted) AND revoked_at IS NULL RETURNING id, user_id
       ), minted_events AS (
         ${auditInsert({
           type: 'token.revoke',
           userId: 'm.user_id',
           ip: '$3',
           userAgent: '$4',
           detail: "jsonb_build_object('tokenId', m.id, 'reason', 'the session it was made with was revoked')",
           createdAt: '$2',
           from: 'm',
         })}
       )
       SELECT ARRAY(SELECT id FROM a UNION ALL SELECT id FROM m) AS ids, (SELECT count(*)::int FROM a) AS own, (SELECT count(*)::int FROM m) AS minted,
              g.user_id AS "decidedBy"
         FROM grants g WHERE g.id = $1`,
      [grantId, now, ip, requestUserAgent()],
      tx,
    );
    return row;
  }

  /** The grants this person approved that still have a live token, by id. */
  async liveGrantsOfUser(tx: Tx, userId: string, now: Date): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(
      `SELECT g.id FROM grants g
        WHERE g.user_id = $1
          AND (EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = g.id AND r.revoked_at IS NULL AND r.expires_at > $2)
               OR EXISTS (SELECT 1 FROM access_tokens t WHERE t.grant_id = g.id AND t.revoked_at IS NULL AND t.expires_at > $2))
        ORDER BY g.id`,
      [userId, now],
      tx,
    );
    return rows.map((row) => row.id);
  }

  /**
   * Locks, in a fixed order (families, then tokens, each by id), every family and minting tree
   * the user's live tokens belong to, and every family of theirs with a live refresh token or a
   * live token made with it: what revokeAllOfUser ends, so no rotation or token being made slips past.
   */
  async lockFamiliesOfUser(tx: Tx, userId: string, now: Date): Promise<void> {
    const roots = `WITH RECURSIVE up AS (
         SELECT id, minted_by_token_id, COALESCE(grant_id, minted_by_grant_id) AS family
           FROM access_tokens WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2
         UNION
         SELECT t.id, t.minted_by_token_id, COALESCE(t.grant_id, t.minted_by_grant_id)
           FROM access_tokens t JOIN up ON t.id = up.minted_by_token_id
       ), roots AS (SELECT id, family FROM up WHERE minted_by_token_id IS NULL)`;
    const families = await this.sql.rows<{ id: string }>(
      `${roots}
       SELECT family AS id FROM roots WHERE family IS NOT NULL
       UNION SELECT grant_id FROM refresh_tokens WHERE user_id = $1 AND revoked_at IS NULL
       UNION SELECT m.minted_by_grant_id FROM access_tokens m JOIN grants g ON g.id = m.minted_by_grant_id
              WHERE g.user_id = $1 AND m.revoked_at IS NULL AND m.expires_at > $2`,
      [userId, now],
      tx,
    );
    await this.grants.lockAll(tx, families.map((family) => family.id));
    await this.sql.rows(`${roots} SELECT id FROM access_tokens WHERE id IN (SELECT id FROM roots WHERE family IS NULL) ORDER BY id FOR UPDATE`, [userId, now], tx);
  }

  /** Revokes, in `tx`, the live tokens exchanged through a federation, each with its event; their ids (TokenRevoker.revokeExchangedThroughIn). */
  async revokeExchangedThrough(tx: Tx, federationId: string, now: Date, ip: string | null): Promise<string[]> {
    const [row] = await this.sql.rows<{ ids: string[] }>(
      `WITH revoked AS (
         UPDATE access_tokens SET revoked_at = $2 WHERE minted_by_federation_id = $1 AND revoked_at IS NULL AND expires_at > $2 RETURNING id, user_id
       ), events AS (
         ${auditInsert({
           type: 'token.revoke',
           userId: 'revoked.user_id',
           ip: '$3',
           userAgent: '$4',
           detail: "jsonb_build_object('tokenId', revoked.id, 'reason', 'the federation it was exchanged through was deleted')",
           createdAt: '$2',
           from: 'revoked',
         })}
       )
       SELECT ARRAY(SELECT id FROM revoked) AS ids`,
      [federationId, now, ip, requestUserAgent()],
      tx,
    );
    return row!.ids;
  }

  /**
   * Revokes, in `tx`, every live access token of the user and every live token made with theirs
   * (recursively: another person's, made by this one as an administrator), with one audit event
   * per long-lived token of theirs and one per made token of someone else, in one statement (their
   * refresh tokens, uncollected approvals and the sessions' events are the caller's next
   * statements: TokenRevoker.revokeEverythingOfUserIn). How many events it recorded of the user's
   * own, the sessions (grants) of the tokens it revoked, and the ids of the other people's
   * tokens it revoked (their owners' caches are not the user's).
   */
  async revokeAllAccessOfUser(tx: Tx, userId: string, now: Date, ip: string | null): Promise<{ ended: number; sessions: string[]; othersTokens: string[] }> {
    const [row] = await this.sql.rows<{ ended: number; sessions: string[]; others: string[] }>(
      `WITH RECURSIVE minted AS (
         SELECT m.id FROM access_tokens p JOIN access_tokens m ON m.minted_by_token_id = p.id WHERE p.user_id = $1
         UNION
         SELECT m.id FROM access_tokens m JOIN grants g ON g.id = m.minted_by_grant_id WHERE g.user_id = $1
         UNION
         SELECT t.id FROM access_tokens t JOIN minted ON t.minted_by_token_id = minted.id
       ), a AS (
         UPDATE access_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 RETURNING id, grant_id
       ), o AS (
         UPDATE access_tokens SET revoked_at = $2
          WHERE id IN (SELECT id FROM minted) AND user_id <> $1 AND revoked_at IS NULL AND expires_at > $2 RETURNING id, user_id
       ), events AS (
         ${auditInsert(
           {
             type: 'token.revoke',
             userId: '$1',
             ip: '$3',
             userAgent: '$4',
             detail: "jsonb_build_object('tokenId', a.id, 'reason', 'signed out everywhere')",
             createdAt: '$2',
             from: 'a WHERE a.grant_id IS NULL',
           },
           '1',
         )}
       ), others_events AS (
         ${auditInsert({
           type: 'token.revoke',
           userId: 'o.user_id',
           ip: '$3',
           userAgent: '$4',
           detail: "jsonb_build_object('tokenId', o.id, 'reason', 'the person who made it signed out everywhere')",
           createdAt: '$2',
           from: 'o',
         })}
       )
       SELECT (SELECT count(*)::int FROM events) AS ended,
              ARRAY(SELECT DISTINCT grant_id FROM a WHERE grant_id IS NOT NULL) AS sessions,
              ARRAY(SELECT id FROM o) AS others`,
      [userId, now, ip, requestUserAgent()],
      tx,
    );
    return { ended: row!.ended, sessions: row!.sessions, othersTokens: row!.others };
  }
}
