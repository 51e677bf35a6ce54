import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type pg from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

/** Postgres's code for a unique-constraint violation. */
const UNIQUE_VIOLATION = '23505';

/**
 * Parameterized SQL straight on the pg pool TypeORM opened (same connections,
 * same settings), for the statements every CLI request runs: verifying a
 * token, polling and starting a device login. TypeORM's `query` builds a query
 * runner, broadcasts events and reshapes results on every call, which cost
 * these requests more CPU than the statements themselves. Transactions and
 * everything else go through TypeORM.
 */
@Injectable()
export class Sql {
  private readonly pool: pg.Pool;

  constructor(@InjectDataSource() dataSource: DataSource) {
    this.pool = (dataSource.driver as PostgresDriver).master as pg.Pool;
  }

  /** The rows the statement returned (none for a statement without RETURNING). */
  async rows<T>(text: string, values: unknown[]): Promise<T[]> {
    return (await this.pool.query(text, values)).rows as T[];
  }
}

/** True when a statement failed because a unique index already holds the value. */
export function isUniqueViolation(err: unknown): boolean {
  const driverError = (err as { driverError?: unknown } | null)?.driverError ?? err;
  return (driverError as { code?: string } | null)?.code === UNIQUE_VIOLATION;
}
