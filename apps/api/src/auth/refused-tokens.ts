import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import { BackgroundWrites } from '../database/background-writes.js';
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
    private readonly audit: AuditService,
    private readonly background: BackgroundWrites,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => this.background.run('record refused tokens', () => this.flush()), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch((err: Error) => this.logger.warn(`could not record the last refused-token counts: ${err.message}`));
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
    await this.audit.recordMany('token.verify_failed', batch);
  }
}
