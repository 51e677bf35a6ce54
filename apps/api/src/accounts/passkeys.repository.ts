import { Injectable } from '@nestjs/common';
import { auditInsert, requestUserAgent } from '../audit/audit-insert.sql-fragment.js';
import { Sql } from '../database/sql.js';

export interface PasskeyRow {
  id: string;
  userId: string;
  credentialId: string;
  publicKey: Buffer;
  counter: number;
  transports: string[];
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

const COLUMNS = `id, user_id AS "userId", credential_id AS "credentialId", public_key AS "publicKey", counter::float8 AS counter,
                 transports, name, created_at AS "createdAt", last_used_at AS "lastUsedAt"`;

/** Every statement on `passkeys`: each change one statement with its audit event. */
@Injectable()
export class PasskeysRepository {
  constructor(private readonly sql: Sql) {}

  listForUser(userId: string): Promise<PasskeyRow[]> {
    return this.sql.rows(`SELECT ${COLUMNS} FROM passkeys WHERE user_id = $1 ORDER BY created_at`, [userId]);
  }

  /** A passkey with its owner's address, which tells whether the browser signing in is the owner's (a device cookie for it). */
  async findForSignIn(credentialId: string): Promise<(PasskeyRow & { ownerEmail: string }) | undefined> {
    const [row] = await this.sql.rows<PasskeyRow & { ownerEmail: string }>(
      `SELECT ${COLUMNS}, (SELECT email FROM users WHERE users.id = passkeys.user_id) AS "ownerEmail" FROM passkeys WHERE credential_id = $1`,
      [credentialId],
    );
    return row;
  }

  /** A new passkey, audited; false when that credential is registered already. */
  async insert(p: Omit<PasskeyRow, 'id' | 'lastUsedAt'>, ip: string | null): Promise<boolean> {
    const rows = await this.sql.rows(
      `WITH added AS (
         INSERT INTO passkeys (user_id, credential_id, public_key, counter, transports, name, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (credential_id) DO NOTHING RETURNING user_id
       )
       ${auditInsert({ type: 'factor.passkey_add', userId: 'user_id', ip: '$8', userAgent: '$9', detail: "jsonb_build_object('label', $6::text)", createdAt: '$7', from: 'added' }, 'id')}`,
      [p.userId, p.credentialId, p.publicKey, p.counter, p.transports, p.name, p.createdAt, ip, requestUserAgent()],
    );
    return rows.length > 0;
  }

  /**
   * Records a use with the authenticator's new signature counter, in one statement: refused
   * (false) when the counter did not grow, which a cloned authenticator would show, unless the
   * authenticator keeps none (zero both times, as synced passkeys do). With `challengeIssuedAt` (a
   * challenge sealed in the browser, which no row holds), also refused unless that challenge was
   * issued after the one of this passkey's last such use: a challenge signs in once.
   */
  async recordUse(id: string, newCounter: number, now: Date, challengeIssuedAt: Date | null): Promise<boolean> {
    const rows = await this.sql.rows(
      `UPDATE passkeys SET counter = $2, last_used_at = $3, last_challenge_issued_at = COALESCE($4, last_challenge_issued_at)
        WHERE id = $1 AND (counter < $2 OR (counter = 0 AND $2 = 0))
          AND ($4::timestamptz IS NULL OR last_challenge_issued_at IS NULL OR last_challenge_issued_at < $4)
        RETURNING id`,
      [id, newCounter, now, challengeIssuedAt],
    );
    return rows.length > 0;
  }

  /** Whether this passkey signed in with a sealed challenge issued at or after `issuedAt` (recordUse refused it as a replay). */
  async usedChallengeSince(id: string, issuedAt: Date): Promise<boolean> {
    const rows = await this.sql.rows(`SELECT 1 FROM passkeys WHERE id = $1 AND last_challenge_issued_at >= $2`, [id, issuedAt]);
    return rows.length > 0;
  }

  async rename(userId: string, id: string, name: string): Promise<boolean> {
    return (await this.sql.count(`UPDATE passkeys SET name = $3 WHERE id = $2 AND user_id = $1`, [userId, id, name])) > 0;
  }

  /** Removes one of the person's passkeys, audited; false when it is not theirs. */
  async remove(userId: string, id: string, now: Date, ip: string | null): Promise<boolean> {
    const rows = await this.sql.rows(
      `WITH gone AS (DELETE FROM passkeys WHERE id = $2 AND user_id = $1 RETURNING user_id, name)
       ${auditInsert({ type: 'factor.passkey_remove', userId: 'user_id', ip: '$4', userAgent: '$5', detail: "jsonb_build_object('label', name)", createdAt: '$3', from: 'gone' }, 'id')}`,
      [userId, id, now, ip, requestUserAgent()],
    );
    return rows.length > 0;
  }

  /** Every passkey of the person (an admin's reset); how many. */
  removeAllOf(userId: string): Promise<number> {
    return this.sql.count(`DELETE FROM passkeys WHERE user_id = $1`, [userId]);
  }
}
