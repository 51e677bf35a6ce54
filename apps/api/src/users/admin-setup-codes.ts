import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { generateSecret, sha256 } from '../common/secrets.js';

/** A sign-up presented a setup code that is wrong, used, or no longer needed. */
export class InvalidSetupCodeError extends Error {
  constructor() {
    super('invalid setup code');
  }
}

const NAME = 'admin-setup-code';
const hashOf = (code: string) => sha256(code).toString('base64url');

/**
 * The one-time code that makes a sign-up the first administrator, kept as its SHA-256
 * in `server_secrets`. It exists only while there is no admin: whoever reaches a fresh
 * deployment first cannot make themselves admin without it.
 */
@Injectable()
export class AdminSetupCodes {
  /** The code this process printed at start, for the banner of `npm start`. */
  issued?: string;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A new code (replacing any earlier one) when no admin exists, else none. */
  async issueIfNoAdmin(): Promise<string | null> {
    const code = generateSecret('prss_');
    const rows = (await this.db.query(
      `INSERT INTO server_secrets (name, value) SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM users WHERE role = 'admin')
       ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, created_at = now()
       RETURNING name`,
      [NAME, hashOf(code)],
    )) as Array<{ name: string }>;
    this.issued = rows.length ? code : undefined;
    return this.issued ?? null;
  }

  /** Uses the code up, inside the caller's transaction; false when it is not the current one or an admin exists. */
  async consume(code: string, tx: EntityManager): Promise<boolean> {
    if (!code.startsWith('prss_') || code.length > 100) return false;
    const [rows] = (await tx.query(
      `DELETE FROM server_secrets WHERE name = $1 AND value = $2 AND NOT EXISTS (SELECT 1 FROM users WHERE role = 'admin') RETURNING name`,
      [NAME, hashOf(code)],
    )) as [Array<{ name: string }>, number];
    return rows.length === 1;
  }

  /** An admin exists by configuration: no code is needed any more. */
  async withdraw(): Promise<void> {
    await this.db.query(`DELETE FROM server_secrets WHERE name = $1`, [NAME]);
  }
}
