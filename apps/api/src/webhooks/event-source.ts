import { Injectable } from '@nestjs/common';
import { EventsService } from '../events/events.service.js';

/**
 * An event as a webhook delivers it: the stream's event object (libs/contract/src/events.ts),
 * passed through untouched; webhooks read only its `id`, `type` and `subject`.
 */
export interface SourcedEvent {
  id: string;
  type: string;
  subject?: { type: string; id: string } | null;
  [field: string]: unknown;
}

/** A page of an organization's events after a cursor, and the cursor after them. */
export interface SourcedPage {
  events: SourcedEvent[];
  next: string;
}

/**
 * Where the dispatcher reads an organization's events from. The contract it relies on is the
 * stream's: committed events only, in a stable order, never one behind a cursor already handed
 * out (so no event is skipped by a cursor that moved past it).
 */
export abstract class EventSource {
  /** The cursor of now: an endpoint made (or enabled again) now gets what follows, none of what came before. */
  abstract head(): Promise<string>;
  /** Up to `limit` events of the organization after `cursor`, and the cursor after them (`cursor` again when none). */
  abstract after(organizationId: string, cursor: string, limit: number): Promise<SourcedPage>;
}

/**
 * The organization's stream of events/ (its cursor only ever moves past committed events), as the
 * dispatcher reads it: each delivery's body is the stream's event object, unchanged.
 */
@Injectable()
export class StreamEventSource extends EventSource {
  constructor(private readonly events: EventsService) {
    super();
  }

  head(): Promise<string> {
    return this.events.head();
  }

  after(organizationId: string, cursor: string, limit: number): Promise<SourcedPage> {
    return this.events.organizationPage(organizationId, { after: cursor, limit: String(limit) });
  }
}
