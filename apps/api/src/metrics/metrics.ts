import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What happened to device logins, as the services decided it. */
export type DeviceLoginEvent = 'started' | 'approved' | 'denied' | 'redeemed' | 'expired';
/** What happened to tokens. */
export type TokenEvent = 'issued' | 'refreshed' | 'revoked' | 'reuse_detected';
/** What happened to mails of the outbox (mail/mail-worker.ts). */
export type MailEvent = 'queued' | 'sent' | 'retried' | 'failed';

/**
 * The service's Prometheus metrics (prom-client), in a registry of its own: requests by method,
 * route template and status with their durations, what happened to device logins and tokens,
 * rate-limit refusals, the verified-token cache, the pool and the revocation listener, and
 * Node's default process metrics. Served on METRICS_PORT only (metrics-server.ts), never on the
 * public port.
 */
@Injectable()
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request arriving to its answer being written, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly deviceLogins = new Counter({
    name: 'prospect_device_logins_total',
    help: 'Device logins by what happened: started, approved, denied, redeemed, expired (each poll that finds its login expired).',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'prospect_tokens_total',
    help: 'Tokens by what happened: issued (access tokens), refreshed (rotations), revoked (access tokens revoked one by one or with their family; sessions ended by signing out everywhere), reuse_detected (refresh families revoked for a reuse).',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });
  readonly rateLimited = new Counter({
    name: 'prospect_rate_limit_refusals_total',
    help: 'Requests refused by a rate limit, by limit.',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });
  readonly tokenCache = new Counter({
    name: 'prospect_token_cache_lookups_total',
    help: 'Bearer tokens looked up in the verified-token cache, by result (hit, miss).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly mails = new Counter({
    name: 'prospect_mails_total',
    help: 'Mails by what happened: queued (committed to the outbox), sent, retried (a try failed; tried again later), failed (given up: MAIL_GIVE_UP_HOURS passed, or the server refused it for good).',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  deviceLogin(event: DeviceLoginEvent): void {
    this.deviceLogins.inc({ event });
  }

  token(event: TokenEvent, count = 1): void {
    if (count > 0) this.tokens.inc({ event }, count);
  }

  mail(event: MailEvent, count = 1): void {
    if (count > 0) this.mails.inc({ event }, count);
  }

  /**
   * `prospect_mail_oldest_waiting_seconds`: how long the oldest mail not yet sent nor given up has
   * waited (0 for none), read from the outbox when Prometheus scrapes, so every replica shows the
   * queue's own age. A read that fails or is slow leaves the last value: the scrape still answers.
   */
  mailQueueAge(read: () => Promise<number>): void {
    new Gauge({
      name: 'prospect_mail_oldest_waiting_seconds',
      help: 'Age of the oldest mail waiting in the outbox (not sent, not given up), in seconds; 0 when none waits.',
      registers: [this.registry],
      async collect() {
        const age = await read().catch(() => undefined);
        if (age !== undefined) this.set(age);
      },
    });
  }

  /**
   * A gauge read when Prometheus scrapes (the pool's counts, the listener's state): no work
   * per request.
   */
  gauge(name: string, help: string, read: () => number | Record<string, number>, labelName?: string): void {
    new Gauge({
      name,
      help,
      labelNames: labelName ? [labelName] : [],
      registers: [this.registry],
      collect() {
        const value = read();
        if (typeof value === 'number') this.set(value);
        else for (const [label, n] of Object.entries(value)) this.set({ [labelName!]: label }, n);
      },
    });
  }
}
