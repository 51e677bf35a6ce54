import { Injectable } from '@nestjs/common';
import { AuditEventsSourceRepository, type AuditEventRow } from './audit-events-source.repository.js';

/**
 * An event as a webhook delivers it: the stream's event object (issue #46 item 1,
 * libs/contract/src/events.ts on the events branch), passed through untouched; webhooks read only
 * its `id` and `type`.
 */
export interface SourcedEvent {
  id: string;
  type: string;
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
  /** The cursor at the end of the organization's stream now: an endpoint made now gets what follows. */
  abstract head(organizationId: string): Promise<string>;
  /** Up to `limit` events of the organization after `cursor`, and the cursor after them (`cursor` again when none). */
  abstract after(organizationId: string, cursor: string, limit: number): Promise<SourcedPage>;
}

/**
 * TEMPORARY ADAPTER, TO BE SWAPPED AT MERGE with the events branch: reads `auth_events` rows of the
 * organization by id, and gives them a provisional shape. Its cursor (`id`) may skip a row whose
 * transaction commits after a higher id was read, which the stream's cursor (writer xid, settled
 * rows only) does not: at merge, `EventSource` is provided by an adapter over
 * `EventsService.organizationPage(organizationId, { after: cursor, limit })` and `toEvent`, and
 * this file and its repository go (module-map: the `auth_events` read of webhooks/ goes with them).
 */
@Injectable()
export class AuditLogEventSource extends EventSource {
  constructor(private readonly rows: AuditEventsSourceRepository) {
    super();
  }

  async head(organizationId: string): Promise<string> {
    return (await this.rows.lastId(organizationId)) ?? '0';
  }

  async after(organizationId: string, cursor: string, limit: number): Promise<SourcedPage> {
    const rows = await this.rows.after(organizationId, /^\d{1,19}$/.test(cursor) ? cursor : '0', limit);
    return { events: rows.map(provisionalEvent), next: rows.at(-1)?.id ?? cursor };
  }
}

/** The row in the event object's shape, provisionally (the catalogue's names and subjects come with the events branch). */
function provisionalEvent(row: AuditEventRow): SourcedEvent {
  return {
    id: `evt_${row.id.padStart(26, '0')}`,
    type: row.type,
    occurredAt: row.createdAt.toISOString(),
    actor: row.userId ? { type: 'user', id: row.userId, email: row.userEmail } : { type: 'system', id: null },
    subject: null,
    organization: { id: row.organizationId, slug: row.organizationSlug, name: row.organizationName },
    ip: row.ip,
    userAgent: null,
    data: row.detail ?? {},
  };
}
