import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';
import type { ClaimConditions } from './claim-conditions.js';

/** A trusted issuer of a service account (workload identity federation). */
export interface FederationRow {
  id: string;
  serviceAccountId: string;
  issuer: string;
  audience: string;
  conditions: ClaimConditions;
  createdAt: Date;
}

const COLUMNS = `id, service_account_id AS "serviceAccountId", issuer, audience, conditions, created_at AS "createdAt"`;

/** Every statement on `service_account_federations` and `service_account_subject_tokens` (issue #45). */
@Injectable()
export class ServiceAccountFederationsRepository {
  constructor(private readonly sql: Sql) {}

  async insert(tx: Tx, row: Omit<FederationRow, 'id'> & { createdBy: string }): Promise<string> {
    const [inserted] = await this.sql.rows<{ id: string }>(
      `INSERT INTO service_account_federations (service_account_id, issuer, audience, conditions, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
      [row.serviceAccountId, row.issuer, row.audience, JSON.stringify(row.conditions), row.createdBy, row.createdAt],
      tx,
    );
    return inserted!.id;
  }

  /** The federations of these accounts, oldest first. */
  listForAccounts(accountIds: readonly string[]): Promise<FederationRow[]> {
    if (!accountIds.length) return Promise.resolve([]);
    return this.sql.rows<FederationRow>(`SELECT ${COLUMNS} FROM service_account_federations WHERE service_account_id = ANY($1::uuid[]) ORDER BY created_at, id`, [accountIds]);
  }

  /** The account's federations trusting `issuer` (exactly), unlocked: read before the subject token is verified. */
  forIssuer(accountId: string, issuer: string): Promise<FederationRow[]> {
    return this.sql.rows<FederationRow>(`SELECT ${COLUMNS} FROM service_account_federations WHERE service_account_id = $1 AND issuer = $2 ORDER BY created_at, id`, [accountId, issuer]);
  }

  /** Whether the federation still exists, share-locked in `tx`: its deletion waits for the token being issued, then revokes it. */
  async shareLock(tx: Tx, accountId: string, id: string): Promise<boolean> {
    const rows = await this.sql.rows(`SELECT 1 FROM service_account_federations WHERE id = $1 AND service_account_id = $2 FOR SHARE`, [id, accountId], tx);
    return rows.length > 0;
  }

  async delete(tx: Tx, accountId: string, id: string): Promise<FederationRow | undefined> {
    const [row] = await this.sql.rows<FederationRow>(`DELETE FROM service_account_federations WHERE id = $1 AND service_account_id = $2 RETURNING ${COLUMNS}`, [id, accountId], tx);
    return row;
  }

  /**
   * Records the subject token `(issuer, jti)` as exchanged, kept until `expiresAt`; false when it
   * was exchanged already (and is still kept). A second request with the same token waits on the
   * key for the first's transaction, then finds it: exactly one wins.
   * The same shape as ServiceAccountsRepository.useAssertion (and the purge below as its purge),
   * not shared: another table and key (an issuer's jti, whatever account it is exchanged for),
   * and each statement stays written out whole, for a reviewer to read.
   */
  async useSubjectToken(tx: Tx, issuer: string, jti: string, expiresAt: Date, now: Date): Promise<boolean> {
    const rows = await this.sql.rows(
      `INSERT INTO service_account_subject_tokens (issuer, jti, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (issuer, jti) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE service_account_subject_tokens.expires_at <= $4
       RETURNING 1`,
      [issuer, jti, expiresAt, now],
      tx,
    );
    return rows.length > 0;
  }

  /** At most `limit` exchanged subject tokens past their `exp` (refused as expired anyway); how many. */
  deleteExpiredSubjectTokens(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM service_account_subject_tokens WHERE (issuer, jti) IN (SELECT issuer, jti FROM service_account_subject_tokens WHERE expires_at < $1 LIMIT $2)`,
      [now, limit],
      tx,
    );
  }
}
