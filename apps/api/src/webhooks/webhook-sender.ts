import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { roleAtLeast } from '@prospect/contract';
import { SignJWT } from 'jose';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { DatabaseAvailability, isDatabaseUnavailable } from '../database/database-availability.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { Mailer } from '../mail/mailer.js';
import { OrganizationsService } from '../organizations/organizations.service.js';
import { SigningKeys } from '../server-secrets/signing-keys.js';
import { type EndpointAnswer, originOf, OutboundUrls } from './outbound-url.js';
import { type ClaimedDelivery, WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import { signature, WebhookSecrets } from './webhook-secrets.js';
import { WebhooksRepository } from './webhooks.repository.js';

/** How often a replica looks for due deliveries when nothing woke it. */
export const SEND_POLL_MS = 1_000;
/** Deliveries one replica sends at once. */
const CONCURRENT_SENDS = 8;
/** A claim outlasts any try (10 s cut, DNS included), so only a replica that died lets one expire. */
const CLAIM_SECONDS = 60;
/** A delivery failing this long after it was written is given up, and its endpoint disabled (issue #46). */
export const GIVE_UP_SECONDS = 3 * 24 * 3600;
/** The longest wait between two tries. */
const MAX_RETRY_SECONDS = 12 * 3600;
/** How long a logout token is valid (Back-Channel Logout 1.0 §2.4 `exp`): it is made at each try. */
const LOGOUT_TOKEN_SECONDS = 120;
/** The event a logout token carries (Back-Channel Logout 1.0 §2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
const MAX_REASON = 500;

/**
 * The outbox's sender, on every replica (issue #46): it claims due deliveries (one statement,
 * FOR UPDATE SKIP LOCKED; per endpoint only the oldest unfinished one is due, so events arrive in
 * order), POSTs each, and records the outcome. A webhook's event goes signed the Standard Webhooks
 * way; a client's logout token is signed with the service's ID-token key at each try. A failed
 * try is due again after WEBHOOK_RETRY_BASE_SECONDS, doubling with jitter (at most 12 hours), until
 * 3 days after the delivery was written: then it is given up, and a webhook's endpoint disabled and
 * its organization's admins mailed. At least once: a replica that dies after the endpoint answered
 * and before recording it leaves a claim that expires, and the delivery is sent again with the same
 * `webhook-id` (receivers deduplicate on it).
 */
@Injectable()
export class WebhookSender implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Webhooks');
  private readonly inFlight = new Map<string, { delivery: ClaimedDelivery; done: Promise<void> }>();
  private running?: Promise<void>;
  private stopping = false;
  private wakeUp?: () => void;
  private wokenMeanwhile = false;

  constructor(
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly webhooks: WebhooksRepository,
    private readonly secrets: WebhookSecrets,
    private readonly urls: OutboundUrls,
    private readonly signingKeys: SigningKeys,
    private readonly organizations: OrganizationsService,
    private readonly mailer: Mailer,
    private readonly audit: AuditService,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly availability: DatabaseAvailability,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.adapterHost.httpAdapter) return;
    this.running = this.loop();
  }

  wake(): void {
    this.wokenMeanwhile = true;
    this.wakeUp?.();
  }

  /**
   * Before the pool closes: no new claim; the tries under way (each cut at 10 s) finish within the
   * shutdown grace, or their claims are given back for the next replica.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.running;
    const grace = Math.max(0, this.config.shutdownGraceSeconds * 1000 - 1_000);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight.values()].map((s) => s.done)), new Promise<void>((r) => (timer = setTimeout(r, grace)))]);
    clearTimeout(timer);
    for (const { delivery } of this.inFlight.values()) {
      await this.deliveries.release([delivery.id], delivery.claimedUntil, 'not answered before the replica stopped; sent again by the next one').catch(() => undefined);
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      this.wokenMeanwhile = false;
      const free = CONCURRENT_SENDS - this.inFlight.size;
      let claimed: ClaimedDelivery[] = [];
      if (free > 0) {
        try {
          const now = this.clock.now();
          claimed = await this.deliveries.claimDue(free, now, new Date(now.getTime() + CLAIM_SECONDS * 1000));
        } catch (err) {
          this.report('claim due deliveries', err);
        }
        for (const delivery of claimed) this.start(delivery);
      }
      if (free > 0 && claimed.length === free) continue;
      await this.nap();
    }
  }

  private nap(): Promise<void> {
    if (this.wokenMeanwhile || this.stopping) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, SEND_POLL_MS);
      this.wakeUp = done;
    });
  }

  private start(delivery: ClaimedDelivery): void {
    // A finished try may make the endpoint's next delivery due: look again at once.
    const done = this.send(delivery).finally(() => {
      this.inFlight.delete(delivery.id);
      this.wake();
    });
    this.inFlight.set(delivery.id, { delivery, done });
  }

  /** One try of one claimed delivery, and its outcome recorded. */
  private async send(delivery: ClaimedDelivery): Promise<void> {
    let answer: EndpointAnswer | undefined;
    let failure: string | undefined;
    try {
      answer = delivery.kind === 'event' ? await this.sendEvent(delivery) : await this.sendLogout(delivery);
      if (!answer) return; // its endpoint is gone
      if (answer.status >= 300 && answer.status < 400) failure = `answered ${answer.status}, a redirect${answer.location ? ` to ${answer.location.slice(0, 200)}` : ''} (redirects are not followed)`;
      else if (answer.status < 200 || answer.status >= 300) failure = `answered ${answer.status}`;
    } catch (err) {
      failure = (err as Error).message;
    }
    try {
      const now = this.clock.now();
      if (!failure) {
        await this.deliveries.markDelivered(delivery.id, delivery.claimedUntil, answer!.status, now);
        return;
      }
      const reason = failure.slice(0, MAX_REASON);
      const deadline = delivery.createdAt.getTime() + GIVE_UP_SECONDS * 1000;
      if (now.getTime() >= deadline) {
        await this.giveUp(delivery, answer?.status ?? null, reason, now);
        return;
      }
      const next = Math.min(deadline, now.getTime() + retryDelaySeconds(this.config.webhookRetryBaseSeconds, delivery.attempts) * 1000);
      await this.deliveries.retryAt(delivery.id, delivery.claimedUntil, new Date(next), answer?.status ?? null, reason);
      this.logger.warn(`delivery ${delivery.id} (${delivery.messageId}) failed (${reason}); trying again at ${new Date(next).toISOString()}`);
    } catch (err) {
      // Its claim expires and it is tried again: at least once.
      this.report(`record the outcome of delivery ${delivery.id}`, err);
    }
  }

  private async sendEvent(delivery: ClaimedDelivery): Promise<EndpointAnswer | undefined> {
    const webhook = await this.webhooks.byId(delivery.webhookId!);
    if (!webhook) return undefined;
    // The wall clock, not the injected one: receivers compare it with their own time (Standard Webhooks' tolerance).
    const timestamp = Math.floor(Date.now() / 1000);
    const signatures = [signature(await this.secrets.open(webhook.id, webhook.secretSealed), delivery.messageId, timestamp, delivery.payload)];
    if (webhook.previousSecretSealed && webhook.previousSecretUntil && webhook.previousSecretUntil > this.clock.now()) {
      signatures.push(signature(await this.secrets.open(webhook.id, webhook.previousSecretSealed), delivery.messageId, timestamp, delivery.payload));
    }
    return this.urls.post(
      webhook.url,
      { 'content-type': 'application/json', 'webhook-id': delivery.messageId, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatures.join(' ') },
      delivery.payload,
    );
  }

  /** A logout token (Back-Channel Logout 1.0 §2.4), made now, POSTed as the `logout_token` form field (§2.5). */
  private async sendLogout(delivery: ClaimedDelivery): Promise<EndpointAnswer> {
    const claims = JSON.parse(delivery.payload) as { aud: string; sub: string; sid?: string };
    const key = await this.signingKeys.current();
    const iat = Math.floor(this.clock.now().getTime() / 1000);
    const token = await new SignJWT({ events: { [BACKCHANNEL_LOGOUT_EVENT]: {} }, ...(claims.sid ? { sid: claims.sid } : {}) })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'logout+jwt' })
      .setIssuer(this.config.publicUrl)
      .setAudience(claims.aud)
      .setSubject(claims.sub)
      .setIssuedAt(iat)
      .setExpirationTime(iat + LOGOUT_TOKEN_SECONDS)
      .setJti(delivery.messageId)
      .sign(key.privateKey);
    return this.urls.post(delivery.targetUrl!, { 'content-type': 'application/x-www-form-urlencoded' }, new URLSearchParams({ logout_token: token }).toString());
  }

  /** Given up; a webhook's endpoint disabled and its organization's admins told by mail, with it. */
  private async giveUp(delivery: ClaimedDelivery, status: number | null, reason: string, now: Date): Promise<void> {
    const webhook = delivery.webhookId ? await this.webhooks.byId(delivery.webhookId) : undefined;
    const admins = webhook ? (await this.organizations.listMembers(webhook.organizationId)).filter((m) => roleAtLeast(m.role, 'admin')) : [];
    const disabledReason = `disabled after failing for 3 days: ${reason}`.slice(0, MAX_REASON);
    await this.uow.run(async (tx) => {
      if (!(await this.deliveries.giveUp(tx, delivery.id, delivery.claimedUntil, status, reason, now))) return;
      if (!webhook || !(await this.webhooks.disableFailing(tx, webhook.id, disabledReason, now))) return;
      // In the organization's log, by the instance itself: no one signed in did it, no request is behind it.
      await this.audit.record(
        'org.webhook_disable_failing',
        { userId: null, ip: null, organizationId: webhook.organizationId, detail: { webhookId: webhook.id, origin: originOf(webhook.url), reason }, at: now },
        tx,
      );
      for (const admin of admins) {
        const text = `The webhook ${webhook.url} of your organization failed for 3 days and was disabled.\n\nLast failure: ${reason}\n\nEnable it again on the organization's webhooks page once it answers; its undelivered events are sent then.`;
        await this.mailer.send({ to: admin.user.email, subject: 'A webhook of your organization was disabled', text, html: `<p>${escapeHtml(text).replace(/\n\n/g, '</p><p>')}</p>` }, tx);
      }
    });
    this.logger.error(`delivery ${delivery.id} (${delivery.messageId}) given up after ${delivery.attempts} tries: ${reason}`);
  }

  private report(what: string, err: unknown): void {
    if (isDatabaseUnavailable(err)) this.availability.report(err);
    else this.logger.warn(`could not ${what}: ${(err as Error).message}`);
  }
}

/** WEBHOOK_RETRY_BASE_SECONDS after the first failure, doubling with each one, with up to 10% of jitter added, at most MAX_RETRY_SECONDS. */
export function retryDelaySeconds(baseSeconds: number, failures: number): number {
  const doubled = Math.min(MAX_RETRY_SECONDS, baseSeconds * 2 ** Math.min(Math.max(0, failures - 1), 20));
  // Jitter spreads the retries of many deliveries that failed together (an endpoint back up).
  return doubled * (1 + Math.random() * 0.1);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
