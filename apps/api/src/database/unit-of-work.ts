import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { Sql } from './sql.js';
import { type Tx, unwrapTx, wrapTx } from './tx.js';

/**
 * The one way to run a unit of work: `run(async (tx) => …)` opens a transaction (READ COMMITTED,
 * Postgres's default), hands `work` an opaque Tx to pass on to repositories and other modules'
 * services, commits when `work` resolves and rolls back when it throws (its error is rethrown).
 * Locks taken inside (FOR UPDATE, advisory locks) hold until then.
 *
 * It is TypeORM's transaction underneath, so a statement that fails because the database is away
 * still discards its connection (BrokenConnectionDiscarder) and answers 503.
 */
@Injectable()
export class UnitOfWork {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly sql: Sql,
  ) {}

  async run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    let tx: Tx | undefined;
    const result = await this.db.transaction((manager) => work((tx = wrapTx(manager))));
    for (const then of unwrapTx(tx!).afterCommit) then();
    return result;
  }

  /**
   * A transaction-level advisory lock (`pg_try_advisory_xact_lock`): true if `tx` holds `key` now,
   * false if another transaction does; released at commit or rollback.
   */
  tryLock(tx: Tx, key: number): Promise<boolean> {
    return this.sql.tryTransactionLock(tx, key);
  }

  /** For the rest of `tx` only (`SET LOCAL`): its statements may each run this long (a batch job's, longer than a request's). */
  async setStatementTimeout(tx: Tx, ms: number): Promise<void> {
    await this.sql.rows(`SELECT set_config('statement_timeout', $1, true)`, [String(ms)], tx);
  }

  /**
   * Calls `then` once `tx` has committed (not at all if it rolls back): for what may only happen
   * after what the transaction wrote is visible to others (waking the mail worker for a mail it queued).
   * `then` must not throw: the transaction has committed by then.
   */
  afterCommit(tx: Tx, then: () => void): void {
    unwrapTx(tx).afterCommit.push(then);
  }
}
