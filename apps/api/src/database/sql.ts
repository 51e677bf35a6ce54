import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type pg from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { DatabaseInfo } from './database-info.js';
import { explainPreparedStatementClash } from './pooler.js';
import { type Tx, unwrapTx } from './tx.js';

/** Postgres's code for a unique-constraint violation. */
const UNIQUE_VIOLATION = '23505';

/**
 * Parameterized SQL straight on the pg pool TypeORM opened (same connections,
 * same settings), for the statements every CLI request runs: verifying a
 * token, polling and starting a device login. TypeORM's `query` builds a query
 * runner, broadcasts events and reshapes results on every call, which cost
 * these requests more CPU than the statements themselves. Every statement of
 * the app goes through it, and only repositories (`*.repository.ts`) call it;
 * a statement in a transaction (UnitOfWork.run's Tx) runs on that transaction's
 * connection through TypeORM's query runner.
 *
 * On a Postgres server each statement is a named prepared statement: every
 * pooled connection parses and plans it once instead of on every request,
 * which raised poll and start throughput by a quarter or more on the 2-core
 * bench machine, where Postgres shares the cores (docs/performance.md).
 * Postgres replans them itself after a migration; the statements name the
 * columns they return, so a new column never changes their result type.
 * Not on the embedded PGlite, whose socket server shares one backend among
 * its connections, so a name prepared by one connection would clash with the
 * next. Nor with DATABASE_PREPARED_STATEMENTS=false: behind PgBouncer in
 * transaction mode, named statements need its prepared-statement support
 * (1.21 or later, `max_prepared_statements` > 0); see pooler.ts.
 */
@Injectable()
export class Sql {
  /** TypeORM's own pg pool; also lent to the web-session store, so sessions use the same connections. */
  readonly pool: pg.Pool;
  private readonly prepare: boolean;
  /** Statement text → its name; the texts are constants in the code, so this stays small. */
  private readonly names = new Map<string, string>();

  /**
   * The pool for a library that names its statements (rate-limiter-flexible): on the
   * embedded database the names are dropped, for the reason above.
   */
  readonly poolForLibraries: { query(config: pg.QueryConfig): Promise<pg.QueryResult> };

  constructor(@InjectDataSource() dataSource: DataSource, database: DatabaseInfo) {
    this.pool = (dataSource.driver as PostgresDriver).master as pg.Pool;
    this.prepare = database.preparedStatements;
    // sql-opaque: the library's own statement, passed on unnamed
    this.poolForLibraries = this.prepare ? this.pool : { query: ({ text, values }: pg.QueryConfig) => this.pool.query({ text, values }) };
  }

  /**
   * The rows the statement returned (none for a statement without RETURNING), whatever its
   * kind: TypeORM's own `query()` answers `[rows, count]` for an UPDATE … RETURNING, which
   * its callers would each have to unpick.
   * @param text a constant: every distinct text becomes a prepared statement.
   * @param tx a transaction to run in (its connection, not prepared); else the pool.
   */
  async rows<T>(text: string, values: unknown[], tx?: Tx): Promise<T[]> {
    // sql-opaque: the caller's text, read by the checker at the caller's call
    if (tx) return (await runnerOf(tx).query(text, values, true)).records as T[];
    return (await this.poolQuery(text, values)).rows as T[];
  }

  /** How many rows the statement touched (a DELETE's or UPDATE's count). Same parameters as `rows`. */
  async count(text: string, values: unknown[], tx?: Tx): Promise<number> {
    // sql-opaque: the caller's text, read by the checker at the caller's call
    if (tx) return (await runnerOf(tx).query(text, values, true)).affected ?? 0;
    return (await this.poolQuery(text, values)).rowCount ?? 0;
  }

  /**
   * A transaction-level advisory lock (`pg_try_advisory_xact_lock`): true if this transaction
   * holds `key` now, false if another one does; released at commit or rollback.
   */
  async tryTransactionLock(tx: Tx, key: number): Promise<boolean> {
    const [row] = await this.rows<{ locked: boolean }>(`SELECT pg_try_advisory_xact_lock($1) AS locked`, [key], tx);
    return row!.locked;
  }

  private poolQuery(text: string, values: unknown[]): Promise<pg.QueryResult> {
    // sql-opaque: the caller's text, read by the checker at the caller's call (rows, count)
    if (!this.prepare) return this.pool.query({ text, values });
    return this.pool.query({ text, values, name: this.nameOf(text) }).catch((err: unknown) => {
      explainPreparedStatementClash(err);
      throw err;
    });
  }

  private nameOf(text: string): string {
    let name = this.names.get(text);
    if (name === undefined) {
      name = `prospect_${this.names.size + 1}`;
      this.names.set(text, name);
    }
    return name;
  }
}

/** The query runner of a transaction UnitOfWork opened (a transaction's manager always has one). */
const runnerOf = (tx: Tx) => unwrapTx(tx).manager.queryRunner!;

/** True when a statement failed because a unique index already holds the value. */
export function isUniqueViolation(err: unknown): boolean {
  const driverError = (err as { driverError?: unknown } | null)?.driverError ?? err;
  return (driverError as { code?: string } | null)?.code === UNIQUE_VIOLATION;
}
