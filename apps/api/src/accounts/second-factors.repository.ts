import { Injectable } from '@nestjs/common';
import { auditInsert, requestUserAgent } from '../audit/audit-insert.sql-fragment.js';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** Every statement on `totp_factors` and `recovery_codes`: each change one statement with its audit event, or in the caller's Tx with it. */
@Injectable()
export class SecondFactorsRepository {
  constructor(private readonly sql: Sql) {}

  /** The person's sealed TOTP key, if they have one. */
  async findTotp(userId: string): Promise<{ keySealed: Buffer; createdAt: Date } | undefined> {
    const [row] = await this.sql.rows<{ keySealed: Buffer; createdAt: Date }>(
      `SELECT key_sealed AS "keySealed", created_at AS "createdAt" FROM totp_factors WHERE user_id = $1`,
      [userId],
    );
    return row;
  }

  /** How many recovery codes are left unused. */
  async unusedRecoveryCodes(userId: string): Promise<number> {
    const [row] = await this.sql.rows<{ n: number }>(`SELECT count(*)::int AS n FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL`, [userId]);
    return row!.n;
  }

  /**
   * Enrols the key (replacing none: false when the person has one already) with its first
   * accepted step, and their recovery codes, in `tx` (its caller audits it there).
   */
  async enrol(tx: Tx, userId: string, keySealed: Buffer, step: number, codeHashes: Buffer[], now: Date): Promise<boolean> {
    const [row] = await this.sql.rows<{ id: string }>(
      `INSERT INTO totp_factors (user_id, key_sealed, last_step, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (user_id) DO NOTHING RETURNING user_id AS id`,
      [userId, keySealed, step, now],
      tx,
    );
    if (!row) return false;
    await this.sql.rows(`DELETE FROM recovery_codes WHERE user_id = $1`, [userId], tx);
    await this.insertRecoveryCodes(tx, userId, codeHashes, now);
    return true;
  }

  /** New recovery codes in place of all the old ones, in `tx` (its caller audits it there). */
  async replaceRecoveryCodes(tx: Tx, userId: string, codeHashes: Buffer[], now: Date): Promise<void> {
    await this.sql.rows(`DELETE FROM recovery_codes WHERE user_id = $1`, [userId], tx);
    await this.insertRecoveryCodes(tx, userId, codeHashes, now);
  }

  private async insertRecoveryCodes(tx: Tx, userId: string, codeHashes: Buffer[], now: Date): Promise<void> {
    await this.sql.rows(`INSERT INTO recovery_codes (user_id, code_hash, created_at) SELECT $1, h, $3 FROM unnest($2::bytea[]) AS h`, [userId, codeHashes, now], tx);
  }

  /** Accepts a TOTP step once: true when `step` is later than every step accepted before (one statement, so two racing uses of one code get one yes). */
  async acceptStep(userId: string, step: number): Promise<boolean> {
    const rows = await this.sql.rows(`UPDATE totp_factors SET last_step = $2 WHERE user_id = $1 AND last_step < $2 RETURNING user_id`, [userId, step]);
    return rows.length > 0;
  }

  /** Uses a recovery code once, audited; false for an unknown or used one. */
  async useRecoveryCode(userId: string, codeHash: Buffer, now: Date, ip: string | null): Promise<boolean> {
    const rows = await this.sql.rows(
      `WITH used AS (UPDATE recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL RETURNING id)
       ${auditInsert({ type: 'factor.recovery_code_used', userId: '$1', ip: '$4', userAgent: '$5', detail: "'{}'::jsonb", createdAt: '$3', from: 'used' }, 'id')}`,
      [userId, codeHash, now, ip, requestUserAgent()],
    );
    return rows.length > 0;
  }

  /** Removes the person's second factors, audited (`by`: the admin who did it, else themselves); false when they had none. */
  async remove(userId: string, now: Date, ip: string | null, by: string = userId): Promise<boolean> {
    const rows = await this.sql.rows(
      `WITH gone AS (DELETE FROM totp_factors WHERE user_id = $1 RETURNING user_id), codes AS (DELETE FROM recovery_codes WHERE user_id = $1)
       ${auditInsert({ type: 'factor.totp_remove', userId: '$4', ip: '$3', userAgent: '$5', detail: "jsonb_build_object('accountId', $1::text)", createdAt: '$2', from: 'gone' }, 'id')}`,
      [userId, now, ip, by, requestUserAgent()],
    );
    return rows.length > 0;
  }
}
