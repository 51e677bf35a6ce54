import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import type { InvalidTokenReason } from './tokens.service.js';

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

  constructor(private readonly audit: AuditService) {}

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
    const batch = [...this.counts.values()];
    this.counts = new Map();
    for (const { ip, reason, count } of batch) {
      await this.audit.record('token.verify_failed', { ip, detail: { reason, count } }).catch((err: Error) => this.logger.warn(`could not record refused tokens: ${err.message}`));
    }
  }
}
