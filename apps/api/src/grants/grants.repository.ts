import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';
import type { GrantState } from './grant-rules.js';
import type { Grant } from './grant.entity.js';

/** What an approval records; `id` given for a device login's grant (it takes the login's id). */
export type NewGrant = Pick<Grant, 'userId' | 'clientId' | 'grantType' | 'scope' | 'adminUntil' | 'credentialEpoch' | 'amr' | 'secondFactor' | 'createdAt'> &
  Partial<Pick<Grant, 'id' | 'acr' | 'authTime' | 'webSession' | 'organizationId'>>;

/** Every statement on `grants`. */
@Injectable()
export class GrantsRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * Records an approval, in `tx`; its id, or undefined when the approving browser session (given as
   * `webSession`) is no longer stored: something ended it (a sign-out everywhere, its provider
   * disabled or narrowed, its link refused) while the approval was on its way, and it approves
   * nothing. Its identity-provider link is copied from its row (`web_sessions.federated_link_id`)
   * in the same statement, under a KEY SHARE lock held to the end of `tx`: an ending deletes the
   * session first and revokes the grants of its link after, so it either waits for this grant and
   * then revokes it, or commits first and this finds no session. The lock lets the session's own
   * writes through (they change `sess`, not its key).
   */
  async insert(tx: Tx, grant: NewGrant): Promise<string | undefined> {
    const [row] = await this.sql.rows<{ id: string }>(
      `WITH approving AS (
         SELECT federated_link_id FROM web_sessions WHERE sid = $12 AND user_id = $2 FOR KEY SHARE
       )
       INSERT INTO grants (id, user_id, client_id, grant_type, scope, admin_until, credential_epoch, amr, acr, auth_time, second_factor, web_session, organization_id, created_at, federated_link_id)
       SELECT COALESCE($1::uuid, gen_random_uuid()), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, (SELECT federated_link_id FROM approving)
        WHERE $12::text IS NULL OR EXISTS (SELECT 1 FROM approving)
       RETURNING id`,
      [
        grant.id ?? null,
        grant.userId,
        grant.clientId,
        grant.grantType,
        grant.scope,
        grant.adminUntil,
        grant.credentialEpoch,
        grant.amr,
        grant.acr ?? null,
        grant.authTime ?? null,
        grant.secondFactor,
        grant.webSession ?? null,
        grant.organizationId ?? null,
        grant.createdAt,
      ],
      tx,
    );
    return row?.id;
  }

  /**
   * Locks the grant for the rest of `tx` and reads what its next token depends on
   * (grant-rules.ts): the grant, its account and its client as they are now. Undefined for none.
   */
  lockForIssue(tx: Tx, grantId: string): Promise<GrantState | undefined> {
    return this.lockStateWhere(tx, `g.id = $1`, grantId);
  }

  /**
   * lockForIssue for the grant a refresh token hangs off, found and locked in one statement (a
   * token's grant never changes, so nothing can move between the two). Undefined for no such token.
   */
  lockForIssueOfRefreshToken(tx: Tx, tokenHash: Buffer): Promise<GrantState | undefined> {
    return this.lockStateWhere(tx, `g.id = (SELECT r.grant_id FROM refresh_tokens r WHERE r.token_hash = $1)`, tokenHash);
  }

  private async lockStateWhere(tx: Tx, where: string, param: unknown): Promise<GrantState | undefined> {
    const [row] = await this.sql.rows<{
      revoked: boolean;
      disabled: boolean | null;
      account_epoch: number | null;
      grant_epoch: number | null;
      client_disabled: boolean;
      second_factor: boolean;
    }>(
      `SELECT g.revoked_at IS NOT NULL AS revoked, u.disabled_at IS NOT NULL AS disabled, u.credential_epoch AS account_epoch, g.credential_epoch AS grant_epoch,
              c.disabled_at IS NOT NULL AS client_disabled, g.second_factor
         FROM grants g JOIN users u ON u.id = g.user_id JOIN oauth_clients c ON c.id = g.client_id
        WHERE ${where} FOR UPDATE OF g`,
      [param],
      tx,
    );
    return (
      row && {
        revoked: row.revoked,
        account: { disabled: !!row.disabled, credentialEpoch: row.account_epoch! },
        approvedUnderEpoch: row.grant_epoch,
        clientDisabled: row.client_disabled,
        secondFactor: row.second_factor,
      }
    );
  }

  /** Locks these grants for the rest of `tx`, in id order (so two lockers never wait on each other in a circle). */
  async lockAll(tx: Tx, grantIds: readonly string[]): Promise<void> {
    if (!grantIds.length) return;
    await this.sql.rows(`SELECT id FROM grants WHERE id = ANY ($1::uuid[]) ORDER BY id FOR UPDATE`, [grantIds], tx);
  }

  /** Marks these grants revoked (those not revoked yet), in `tx`. */
  async revoke(tx: Tx, grantIds: readonly string[], now: Date): Promise<void> {
    if (!grantIds.length) return;
    await this.sql.rows(`UPDATE grants SET revoked_at = $2 WHERE id = ANY ($1::uuid[]) AND revoked_at IS NULL`, [grantIds, now], tx);
  }

  /** Marks every grant of the person revoked, in `tx` ("sign out everywhere", an account taken back). */
  async revokeAllOfUser(tx: Tx, userId: string, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE grants SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL`, [userId, now], tx);
  }

  /** The grants not revoked yet that sessions signed in through these identity-provider links approved, by id. */
  async liveOfFederatedLinks(tx: Tx, linkIds: readonly string[]): Promise<string[]> {
    if (!linkIds.length) return [];
    const rows = await this.sql.rows<{ id: string }>(
      `SELECT id FROM grants WHERE federated_link_id = ANY ($1::uuid[]) AND revoked_at IS NULL ORDER BY id`,
      [linkIds],
      tx,
    );
    return rows.map((row) => row.id);
  }

  /** The grants the person gave this client by an authorization code, by id. */
  async codeGrantsOf(tx: Tx, userId: string, clientId: string): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(
      `SELECT id FROM grants WHERE user_id = $1 AND client_id = $2 AND grant_type = 'authorization_code' ORDER BY id`,
      [userId, clientId],
      tx,
    );
    return rows.map((row) => row.id);
  }

  /**
   * The grants of a client that still have a live token, or a live token made with one of theirs:
   * what to revoke when it is disabled. (A token made with a token made with theirs ends no later
   * than that one, and is revoked with it.)
   */
  async withLiveTokensOfClient(tx: Tx, clientId: string): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(
      `SELECT g.id FROM grants g
        WHERE g.client_id = $1
          AND (EXISTS (SELECT 1 FROM access_tokens t WHERE t.grant_id = g.id AND t.revoked_at IS NULL)
               OR EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = g.id AND r.revoked_at IS NULL)
               OR EXISTS (SELECT 1 FROM access_tokens m WHERE m.minted_by_grant_id = g.id AND m.revoked_at IS NULL))
        ORDER BY g.id`,
      [clientId],
      tx,
    );
    return rows.map((row) => row.id);
  }

  /**
   * Every grant of a client being deleted (its refresh tokens and the tokens made with them go with
   * them; its access tokens, revoked, stay unlinked); how many.
   */
  deleteAllOfClient(tx: Tx, clientId: string): Promise<number> {
    return this.sql.count(`DELETE FROM grants WHERE client_id = $1`, [clientId], tx);
  }

  /**
   * At most `limit` grants that nothing hangs off any more (retention): no token of theirs or made
   * with theirs, no device login pointing to them (an approval not collected yet), created before
   * `before`; how many.
   */
  deleteUnusedBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM grants WHERE id IN (
         SELECT g.id FROM grants g WHERE g.created_at < $1
            AND NOT EXISTS (SELECT 1 FROM access_tokens t WHERE t.grant_id = g.id)
            AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = g.id)
            AND NOT EXISTS (SELECT 1 FROM access_tokens m WHERE m.minted_by_grant_id = g.id)
            AND NOT EXISTS (SELECT 1 FROM device_logins d WHERE d.grant_id = g.id)
          LIMIT $2)`,
      [before, limit],
      tx,
    );
  }
}
