import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { roleAtLeast } from '@prospect/contract';
import { SignJWT } from 'jose';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { DatabaseAvailability } from '../database/database-availability.js';
import { OutboxWorker, retryDelaySeconds } from '../database/outbox-worker.js';
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
/** Up to 10 % more on each wait: the retries of many deliveries that failed together (an endpoint back up) spread out. */
const RETRY_JITTER = 0.1;
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
 * `webhook-id` (receivers deduplicate on it). The loop, its claims and its shutdown are
 * database/outbox-worker.ts's, as the mail worker's are.
 */
@Injectable()
export class WebhookSender implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Webhooks');
  private readonly worker: OutboxWorker<ClaimedDelivery>;

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
    availability: DatabaseAvailability,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.worker = new OutboxWorker<ClaimedDelivery>({
      name: 'Webhooks',
      rows: 'deliveries',
      pollMs: SEND_POLL_MS,
      concurrency: CONCURRENT_SENDS,
      claim: (limit) => {
        const now = this.clock.now();
        return this.deliveries.claimDue(limit, now, new Date(now.getTime() + CLAIM_SECONDS * 1000));
      },
      work: (delivery) => this.send(delivery),
      release: (ids, claimedUntil, reason) => this.deliveries.release(ids, claimedUntil, reason),
      // A finished try may make the endpoint's next delivery due: look again at once.
      claimAfterEachTry: true,
      availability,
    });
  }

  onApplicationBootstrap(): void {
    if (!this.adapterHost.httpAdapter) return;
    this.worker.start();
  }

  wake(): void {
    this.worker.wake();
  }

  /**
   * Before the pool closes: no new claim; the tries under way (each cut at 10 s) finish within the
   * shutdown grace, or their claims are given back for the next replica.
   */
  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.shutdown(Date.now() + this.config.shutdownGraceSeconds * 1000);
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
    if (this.worker.isAbandoned(delivery.id)) return; // its claim was given back at shutdown
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
      const next = Math.min(deadline, now.getTime() + retryDelaySeconds(this.config.webhookRetryBaseSeconds, delivery.attempts, MAX_RETRY_SECONDS, RETRY_JITTER) * 1000);
      await this.deliveries.retryAt(delivery.id, delivery.claimedUntil, new Date(next), answer?.status ?? null, reason);
      this.logger.warn(`delivery ${delivery.id} (${delivery.messageId}) failed (${reason}); trying again at ${new Date(next).toISOString()}`);
    } catch (err) {
      // Its claim expires and it is tried again: at least once.
      this.worker.report(`record the outcome of delivery ${delivery.id}`, err);
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
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
