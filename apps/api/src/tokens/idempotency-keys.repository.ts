import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** An answer kept for an Idempotency-Key. */
export interface IdempotentReplyRow {
  requestHash: Buffer;
  replySealed: Buffer;
}

/** What is kept for one Idempotency-Key (migration 1795400000031 says what each column holds). */
export interface NewIdempotentReply extends IdempotentReplyRow {
  lookupHash: Buffer;
  userId: string;
  createdAt: Date;
}

/**
 * Every statement on `idempotency_keys`: the answers `POST /api/cli/auth/token` gives again for an
 * Idempotency-Key. Each runs in the caller's transaction, which holds the key's lock (`tryLock`).
 */
@Injectable()
export class IdempotencyKeysRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * A transaction-level advisory lock on one key (`pg_try_advisory_xact_lock`, in its two-key space,
   * apart from the service's one-key locks, from the first 8 bytes of the lookup hash): true if this
   * transaction holds it now, false if another request with the same key does. Released at commit
   * or rollback, so a request that died mid-way leaves nothing held.
   */
  async tryLock(tx: Tx, lookupHash: Buffer): Promise<boolean> {
    const [row] = await this.sql.rows<{ locked: boolean }>(`SELECT pg_try_advisory_xact_lock($1::int4, $2::int4) AS locked`, [lookupHash.readInt32BE(0), lookupHash.readInt32BE(4)], tx);
    return row!.locked;
  }

  /** The answer kept for the key, if it was kept after `since`. */
  async findSince(tx: Tx, lookupHash: Buffer, since: Date): Promise<IdempotentReplyRow | undefined> {
    const [row] = await this.sql.rows<IdempotentReplyRow>(
      `SELECT request_hash AS "requestHash", reply_sealed AS "replySealed" FROM idempotency_keys WHERE lookup_hash = $1 AND created_at > $2`,
      [lookupHash, since],
      tx,
    );
    return row;
  }

  /** Keeps the answer for the key, replacing one kept before the window (not yet purged). */
  async save(tx: Tx, reply: NewIdempotentReply): Promise<void> {
    await this.sql.rows(
      `INSERT INTO idempotency_keys (lookup_hash, user_id, request_hash, reply_sealed, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (lookup_hash) DO UPDATE
         SET user_id = EXCLUDED.user_id, request_hash = EXCLUDED.request_hash, reply_sealed = EXCLUDED.reply_sealed, created_at = EXCLUDED.created_at`,
      [reply.lookupHash, reply.userId, reply.requestHash, reply.replySealed, reply.createdAt],
      tx,
    );
  }

  /** Answers kept before `before` (the window is over), at most `limit` of them: the retention job's. */
  deleteCreatedBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM idempotency_keys WHERE lookup_hash IN (SELECT lookup_hash FROM idempotency_keys WHERE created_at < $1 LIMIT $2)`,
      [before, limit],
      tx,
    );
  }
}
