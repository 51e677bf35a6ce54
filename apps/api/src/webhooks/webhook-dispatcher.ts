import { type BeforeApplicationShutdown, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Clock } from '../common/clock.js';
import { DatabaseAvailability } from '../database/database-availability.js';
import { PollingLoop } from '../database/outbox-worker.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { EventSource, type SourcedEvent } from './event-source.js';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import { WebhookSender } from './webhook-sender.js';
import { WebhooksRepository } from './webhooks.repository.js';

/**
 * Whether the event is about the endpoint itself (its creation, change, rotated secret): those go
 * to the organization's stream and its other endpoints, not to the endpoint they describe. Its
 * creation comes after the cursor it starts from (written in the same transaction), and an
 * endpoint's first delivery should be the first event it asked for.
 */
const isAbout = (event: SourcedEvent, endpointId: string): boolean => event.subject?.type === 'webhook' && event.subject.id === endpointId;

/** How often a replica looks for new events when nothing woke it. */
export const DISPATCH_POLL_MS = 1_000;
/** Events read per endpoint per turn. */
const PAGE = 100;

/**
 * Turns an organization's events into deliveries of its endpoints, on every replica: for each
 * enabled endpoint, under its row's lock (FOR UPDATE SKIP LOCKED: another replica dispatching it
 * now is left to it), the events after its cursor are read from the EventSource, those of its
 * types written as deliveries in order, and the cursor moved past them, in one transaction. A
 * crash between reading and committing leaves the cursor where it was, and the unique (endpoint,
 * event) index keeps a second dispatch from writing an event twice. WebhookSender sends them.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly loop: PollingLoop;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly webhooks: WebhooksRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly source: EventSource,
    private readonly sender: WebhookSender,
    private readonly clock: Clock,
    availability: DatabaseAvailability,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    // Events read: there may be more after them, so the next turn follows at once.
    this.loop = new PollingLoop({ name: 'Webhooks', pollMs: DISPATCH_POLL_MS, what: 'dispatch events to webhooks', availability, turn: async () => (await this.dispatchOnce()) > 0 });
  }

  onApplicationBootstrap(): void {
    // Only the serving application dispatches (a one-off command builds the same modules without a server).
    if (!this.adapterHost.httpAdapter) return;
    this.loop.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.loop.stop();
  }

  wake(): void {
    this.loop.wake();
  }

  /** One pass over every enabled endpoint; how many events it read (tests call it to not wait for the poll). */
  async dispatchOnce(): Promise<number> {
    let read = 0;
    let written = 0;
    for (const id of await this.webhooks.enabledIds()) {
      if (this.loop.stopped) break;
      const [seen, wrote] = await this.uow.run(async (tx): Promise<[number, number]> => {
        const endpoint = await this.webhooks.lockForDispatch(tx, id);
        if (!endpoint) return [0, 0];
        const page = await this.source.after(endpoint.organizationId, endpoint.cursor, PAGE);
        if (page.next === endpoint.cursor) return [0, 0];
        const wanted = page.events.filter((event) => (!endpoint.types.length || endpoint.types.includes(event.type)) && !isAbout(event, endpoint.id));
        await this.deliveries.insertEvents(tx, endpoint.id, wanted.map((event) => ({ id: event.id, type: event.type, body: JSON.stringify(event) })), this.clock.now());
        await this.webhooks.moveCursor(tx, endpoint.id, page.next);
        return [page.events.length, wanted.length];
      });
      read += seen;
      written += wrote;
    }
    if (written) this.sender.wake();
    return read;
  }
}
