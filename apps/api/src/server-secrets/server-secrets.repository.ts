import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** Every statement on `server_secrets`: keys the server makes for itself, and the admin setup code's hash. */
@Injectable()
export class ServerSecretsRepository {
  constructor(private readonly sql: Sql) {}

  /** The value kept under `name`, storing `candidate` if there is none yet (one statement, so racing instances agree). */
  async getOrCreate(name: string, candidate: string): Promise<string> {
    const [row] = await this.sql.rows<{ value: string }>(
      `INSERT INTO server_secrets (name, value) VALUES ($1, $2)
       ON CONFLICT (name) DO UPDATE SET name = server_secrets.name RETURNING value`,
      [name, candidate],
    );
    return row!.value;
  }

  /** Stores `value` under `name` unless one is there already or an admin exists; whether it did. */
  async createUnlessPresentOrAdmin(name: string, value: string): Promise<boolean> {
    const rows = await this.sql.rows(
      `INSERT INTO server_secrets (name, value) SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM users WHERE role = 'admin')
       ON CONFLICT (name) DO NOTHING RETURNING name`,
      [name, value],
    );
    return rows.length > 0;
  }

  /** When `name` was stored, if it is and no admin exists. */
  async createdAtUnlessAdmin(name: string): Promise<Date | undefined> {
    const [row] = await this.sql.rows<{ created_at: Date }>(
      `SELECT created_at FROM server_secrets WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM users WHERE role = 'admin')`,
      [name],
    );
    return row?.created_at;
  }

  /** Stores (or replaces) `value` under `name` unless an admin exists; whether it did. */
  async putUnlessAdminExists(name: string, value: string): Promise<boolean> {
    const rows = await this.sql.rows(
      `INSERT INTO server_secrets (name, value) SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM users WHERE role = 'admin')
       ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, created_at = now()
       RETURNING name`,
      [name, value],
    );
    return rows.length > 0;
  }

  /** Deletes `name` if it holds `value` and no admin exists, in the caller's transaction; whether it did. */
  async takeUnlessAdminExists(tx: Tx, name: string, value: string): Promise<boolean> {
    const rows = await this.sql.rows(
      `DELETE FROM server_secrets WHERE name = $1 AND value = $2 AND NOT EXISTS (SELECT 1 FROM users WHERE role = 'admin') RETURNING name`,
      [name, value],
      tx,
    );
    return rows.length === 1;
  }

  async delete(name: string): Promise<void> {
    await this.sql.rows(`DELETE FROM server_secrets WHERE name = $1`, [name]);
  }

  /** Every secret whose name starts with `prefix`, newest first (on the pool, or in `tx`). */
  listByPrefix(prefix: string, tx?: Tx): Promise<Array<{ name: string; value: string; createdAt: Date }>> {
    return this.sql.rows(
      `SELECT name, value, created_at AS "createdAt" FROM server_secrets WHERE starts_with(name, $1) ORDER BY created_at DESC, name DESC`,
      [prefix],
      tx,
    );
  }

  /** Stores a new secret made at `createdAt` (the service's clock, which tests move), in `tx`. */
  async insertAt(tx: Tx, name: string, value: string, createdAt: Date): Promise<void> {
    await this.sql.rows(`INSERT INTO server_secrets (name, value, created_at) VALUES ($1, $2, $3)`, [name, value, createdAt], tx);
  }

  /** Deletes these secrets, in `tx`; how many. */
  deleteNames(tx: Tx, names: readonly string[]): Promise<number> {
    return this.sql.count(`DELETE FROM server_secrets WHERE name = ANY ($1::text[])`, [names], tx);
  }

  /** Waits for the transaction-level advisory lock `key` (released at commit or rollback): one replica at a time past it. */
  async lockForTransaction(tx: Tx, key: number): Promise<void> {
    await this.sql.rows(`SELECT pg_advisory_xact_lock($1)`, [key], tx);
  }
}
