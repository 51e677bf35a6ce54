import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { Sql } from '../database/sql.js';
import type { InvalidTokenReason } from './access-token-verifier.js';

/** How often the counts are written. */
const FLUSH_INTERVAL_MS = 10_000;

/**
 * Refused bearer tokens, counted in memory by address and reason and written as one
 * audit event per pair every 10 s (and at shutdown): a client hammering the API with
 * bad tokens costs no database write per request, and the trail still says who, why
 * and how often.
 */
@Injectable()
export class RefusedTokens implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RefusedTokens.name);
  private counts = new Map<string, { ip: string | null; reason: InvalidTokenReason; count: number }>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly sql: Sql,
    private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  count(ip: string | null | undefined, reason: InvalidTokenReason): void {
    const key = `${ip ?? ''}|${reason}`;
    const entry = this.counts.get(key);
    if (entry) entry.count++;
    else this.counts.set(key, { ip: ip ?? null, reason, count: 1 });
  }

  /** Writes what was counted since the last flush. */
  async flush(): Promise<void> {
    if (!this.counts.size) return;
    const batch = [...this.counts.values()].map(({ ip, reason, count }) => ({ ip, detail: { reason, count } }));
    this.counts = new Map();
    // One statement for the whole batch: a database that is down costs one timeout, not one per address.
    await this.sql
      .rows(
        `INSERT INTO auth_events (type, ip, detail, created_at)
         SELECT 'token.verify_failed', x.ip, x.detail, $2 FROM jsonb_to_recordset($1::jsonb) AS x(ip text, detail jsonb)`,
        [JSON.stringify(batch), this.clock.now()],
      )
      .catch((err: Error) => this.logger.warn(`could not record ${batch.length} refused-token count(s): ${err.message}`));
  }
}
