import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import {
  type CreateWebhookRequest,
  type UpdateWebhookRequest,
  type Webhook,
  WEBHOOK_DELIVERIES_PAGE,
  type WebhookDelivery,
  WEBHOOKS_PER_ORGANIZATION_MAX,
  type WebhookSecretResponse,
} from '@prospect/contract';
import { badRequest, conflict, notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { type OrgActor, OrganizationsService } from '../organizations/organizations.service.js';
import { EventSource } from './event-source.js';
import { originOf, OutboundUrlRefused, OutboundUrls } from './outbound-url.js';
import { WebhookDeliveriesRepository, type DeliveryLogRow } from './webhook-deliveries.repository.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookSecrets } from './webhook-secrets.js';
import { WebhooksRepository, type WebhookRow } from './webhooks.repository.js';

/** How long the secret before a rotation keeps signing too (issue #46). */
export const ROTATION_OVERLAP_SECONDS = 24 * 3600;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An organization's webhooks as its admins manage them (issue #46 item 3, docs/webhooks.md). */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly secrets: WebhookSecrets,
    private readonly urls: OutboundUrls,
    private readonly source: EventSource,
    private readonly dispatcher: WebhookDispatcher,
    private readonly organizations: OrganizationsService,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
  ) {}

  /** A new endpoint and its secret (shown this once); it receives the events that follow. */
  async create(actor: OrgActor, input: CreateWebhookRequest): Promise<WebhookSecretResponse> {
    await this.vetUrl(input.url);
    const id = randomUUID();
    const secret = this.secrets.make();
    const types = [...new Set(input.types ?? [])];
    const secretSealed = await this.secrets.seal(id, secret);
    const cursor = await this.source.head();
    const row = await this.uow.run(async (tx) => {
      const inserted = await this.webhooks.insert(
        { id, organizationId: actor.organization.id, url: input.url, types, secretSealed, cursor, createdBy: actor.userId, now: this.clock.now(), max: WEBHOOKS_PER_ORGANIZATION_MAX },
        tx,
      );
      if (inserted) await this.organizations.record(tx, actor, 'org.webhook_create', { webhookId: id, origin: originOf(inserted.url), types: typesWord(types) });
      return inserted;
    });
    if (!row) throw conflict(`An organization may have at most ${WEBHOOKS_PER_ORGANIZATION_MAX} webhooks; delete one first.`);
    return { id, secret, webhook: view(row) };
  }

  async list(actor: OrgActor): Promise<Webhook[]> {
    return (await this.webhooks.list(actor.organization.id)).map(view);
  }

  async get(actor: OrgActor, id: string): Promise<Webhook> {
    return view(await this.found(actor, id));
  }

  async update(actor: OrgActor, id: string, change: UpdateWebhookRequest): Promise<Webhook> {
    await this.found(actor, id);
    if (change.url !== undefined) await this.vetUrl(change.url);
    const types = change.types ? [...new Set(change.types)] : null;
    const headCursor = change.disabled === false ? await this.source.head() : null;
    const row = await this.uow.run(async (tx) => {
      const updated = await this.webhooks.update(
        actor.organization.id,
        id,
        { url: change.url ?? null, types, disabled: change.disabled ?? null, reason: 'disabled by an admin', headCursor, now: this.clock.now() },
        tx,
      );
      if (updated) {
        // What the request set (the same value again included): an admin's act is recorded as asked.
        const changed = (['url', 'types', 'disabled'] as const).filter((field) => change[field] !== undefined);
        await this.organizations.record(tx, actor, 'org.webhook_update', {
          webhookId: id,
          origin: originOf(updated.url),
          changed: changed.join(','),
          ...(types ? { types: typesWord(types) } : {}),
          ...(change.disabled !== undefined ? { disabled: change.disabled } : {}),
        });
      }
      return updated;
    });
    if (!row) throw notFound('No such webhook.');
    this.dispatcher.wake();
    return view(row);
  }

  async remove(actor: OrgActor, id: string): Promise<void> {
    const deleted =
      UUID.test(id) &&
      (await this.uow.run(async (tx) => {
        const url = await this.webhooks.delete(actor.organization.id, id, tx);
        if (url) await this.organizations.record(tx, actor, 'org.webhook_delete', { webhookId: id, origin: originOf(url) });
        return url !== undefined;
      }));
    if (!deleted) throw notFound('No such webhook.');
  }

  /** A new secret, shown this once; the one before it keeps signing for ROTATION_OVERLAP_SECONDS. */
  async rotateSecret(actor: OrgActor, id: string): Promise<WebhookSecretResponse> {
    await this.found(actor, id);
    const secret = this.secrets.make();
    const now = this.clock.now();
    const sealed = await this.secrets.seal(id, secret);
    const row = await this.uow.run(async (tx) => {
      const rotated = await this.webhooks.rotate(actor.organization.id, id, sealed, new Date(now.getTime() + ROTATION_OVERLAP_SECONDS * 1000), now, tx);
      if (rotated) {
        await this.organizations.record(tx, actor, 'org.webhook_secret_rotate', {
          webhookId: id,
          origin: originOf(rotated.url),
          previousSecretValidUntil: rotated.previousSecretUntil?.toISOString() ?? null,
        });
      }
      return rotated;
    });
    if (!row) throw notFound('No such webhook.');
    return { id, secret, webhook: view(row) };
  }

  async deliveryLog(actor: OrgActor, id: string): Promise<WebhookDelivery[]> {
    await this.found(actor, id);
    return (await this.deliveries.log(id, WEBHOOK_DELIVERIES_PAGE)).map(deliveryView);
  }

  /** The delivery's event again, at the end of the endpoint's queue. */
  async redeliver(actor: OrgActor, id: string, deliveryId: string): Promise<WebhookDelivery> {
    await this.found(actor, id);
    const row = UUID.test(deliveryId) ? await this.deliveries.redeliver(id, deliveryId, this.clock.now()) : undefined;
    if (!row) throw notFound('No such delivery of this webhook.');
    this.dispatcher.wake();
    return deliveryView(row);
  }

  /** Retention: deliveries that ended before `before`, at most `limit`; how many went. */
  purgeEndedBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.deliveries.deleteEndedBefore(tx, before, limit);
  }

  private async found(actor: OrgActor, id: string): Promise<WebhookRow> {
    const row = UUID.test(id) ? await this.webhooks.find(actor.organization.id, id) : undefined;
    if (!row) throw notFound('No such webhook.');
    return row;
  }

  /** 400 naming what is wrong with the URL (its protocol, its address, its name that does not resolve). */
  private async vetUrl(url: string): Promise<void> {
    try {
      await this.urls.vet(url);
    } catch (err) {
      if (err instanceof OutboundUrlRefused) throw badRequest(err.message);
      throw err;
    }
  }
}

/** An endpoint's types as its events record them: comma-separated, `*` for every type. */
export const typesWord = (types: readonly string[]): string => (types.length ? types.join(',') : '*');

function view(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    types: row.types,
    disabled: row.disabledAt !== null,
    disabledReason: row.disabledReason,
    previousSecretValidUntil: row.previousSecretUntil?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
  };
}

function deliveryView(row: DeliveryLogRow): WebhookDelivery {
  const state = row.deliveredAt ? 'delivered' : row.givenUpAt ? 'failed' : 'pending';
  return {
    id: row.id,
    eventId: row.messageId,
    eventType: row.eventType,
    state,
    attempts: row.attempts,
    lastStatus: row.lastStatus,
    lastError: row.lastError,
    nextAttemptAt: state === 'pending' ? row.nextAttemptAt.toISOString() : null,
    deliveredAt: row.deliveredAt?.toISOString() ?? null,
    createdAt: row.createdAt.toISOString(),
    redeliveryOf: row.redeliveryOf,
  };
}
