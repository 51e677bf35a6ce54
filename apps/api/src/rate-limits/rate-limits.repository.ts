import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** rate-limiter-flexible writes and reads `rate_limits` itself; this is the cleanup it leaves to us. */
@Injectable()
export class RateLimitsRepository {
  constructor(private readonly sql: Sql) {}

  /** At most `limit` counters past their window (the library keeps `expire` in ms); how many. */
  deleteExpired(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.sql.count(`DELETE FROM rate_limits WHERE key IN (SELECT key FROM rate_limits WHERE expire < $1 LIMIT $2)`, [now.getTime(), limit], tx);
  }
}
