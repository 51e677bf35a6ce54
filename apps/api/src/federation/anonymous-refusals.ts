import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AuditService } from '../audit/audit.service.js';
import { BackgroundWrites } from '../database/background-writes.js';

/** How often the counts are written. */
const FLUSH_INTERVAL_MS = 10_000;

/**
 * Refused sign-ins through a provider that concern nobody yet (no sign-in started in this
 * browser, an answer that fails its state, nonce or iss check, a provider unknown, disabled or
 * unreachable): anyone can cause them for free, so they are counted in memory by address,
 * provider and reason and written as one `federation.login_refused` event per triple every 10 s
 * (and at shutdown), as refused bearer tokens are. Refusals of a person, or of an identity the
 * provider vouched for (which took a sign-in there), are written at once by the caller.
 */
@Injectable()
export class AnonymousRefusals implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(AnonymousRefusals.name);
  private counts = new Map<string, { ip: string | null; organizationId: string | null; detail: { providerId: string; reason: string; count: number } }>();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly audit: AuditService,
    private readonly background: BackgroundWrites,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => this.background.run('record refused sign-ins through providers', () => this.flush()), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch((err: Error) => this.logger.warn(`could not record the last refused sign-ins: ${err.message}`));
  }

  /** @param organizationId an organization's provider's (its SAML connection's, issue #47): the count shows in its log too. */
  count(ip: string | null | undefined, providerId: string, reason: string, organizationId: string | null = null): void {
    const key = JSON.stringify([ip ?? null, providerId, reason, organizationId]);
    const entry = this.counts.get(key);
    if (entry) entry.detail.count++;
    else this.counts.set(key, { ip: ip ?? null, organizationId, detail: { providerId, reason, count: 1 } });
  }

  /** Writes what was counted since the last flush. */
  async flush(): Promise<void> {
    if (!this.counts.size) return;
    const batch = [...this.counts.values()];
    this.counts = new Map();
    await this.audit.recordMany('federation.login_refused', batch);
  }
}
