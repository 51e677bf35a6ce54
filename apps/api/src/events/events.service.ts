import { Injectable } from '@nestjs/common';
import { type Event, EVENT_DATA_SCHEMAS, EVENTS_PAGE_DEFAULT, EVENTS_PAGE_MAX, type EventPage, type EventType } from '@prospect/contract';
import type { AuthEventType } from '../audit/auth-event.entity.js';
import { badRequest } from '../common/api-exception.js';
import { EVENT_CATALOGUE, INTERNAL_TYPES_OF } from './event-catalogue.js';
import { eventId, positionOf, STREAM_START, type StreamPosition } from './event-id.js';
import { EventsRepository, type StreamRow } from './events.repository.js';

/** A stream request's query, as it came (strings or nothing). */
export interface StreamQuery {
  after?: unknown;
  types?: unknown;
  limit?: unknown;
}

/** The most types one `types` filter may name (there are fewer public types than this). */
const TYPES_MAX = 100;

/**
 * The security log as public events (issue #46, docs/events.md): the catalogue's reading of each
 * row, and the cursor-paged stream of the instance or of one organization.
 */
@Injectable()
export class EventsService {
  constructor(private readonly events: EventsRepository) {}

  /** A page of the instance's events (instance admins). */
  instancePage(query: StreamQuery): Promise<EventPage> {
    const { after, types, limit } = parseQuery(query);
    return this.page(after, (types) => this.events.instancePage(after, types, limit), types);
  }

  /** A page of one organization's events (its admins). */
  organizationPage(organizationId: string, query: StreamQuery): Promise<EventPage> {
    const { after, types, limit } = parseQuery(query);
    return this.page(after, (types) => this.events.organizationPage(organizationId, after, types, limit), types);
  }

  /**
   * The cursor of now, for any stream: what follows it is what happens from now on (a webhook made
   * now delivers that). Events committed or under way at this moment, settled or not, come before.
   */
  async head(): Promise<string> {
    return eventId(await this.events.now());
  }

  private async page(after: StreamPosition, read: (types: AuthEventType[] | null) => Promise<StreamRow[]>, types: EventType[] | null): Promise<EventPage> {
    const rows = await read(types && types.flatMap((type) => INTERNAL_TYPES_OF.get(type) ?? []));
    const events = rows.map(toEvent);
    // No event: the same cursor again (nothing settled after it yet).
    return { events, next: events.at(-1)?.id ?? eventId(after) };
  }
}

/** The catalogue's reading of one stored row: the public event, as the stream shows it and a webhook will deliver it. */
export function toEvent(row: StreamRow): Event {
  const entry = EVENT_CATALOGUE[row.type];
  const detail = row.detail ?? {};
  const user = row.userId ? { type: 'user' as const, id: row.userId, email: row.userEmail } : null;
  const userIsSubject = entry.user === 'subject';
  const subjectId = entry.subject ? detail[entry.subject[1]] : undefined;
  const subject =
    entry.subject && typeof subjectId === 'string' && subjectId
      ? { type: entry.subject[0], id: subjectId }
      : userIsSubject && user
        ? { type: 'user' as const, id: user.id }
        : row.organizationId && entry.type.startsWith('organization.')
          ? { type: 'organization' as const, id: row.organizationId }
          : null;
  return {
    id: eventId({ xid: BigInt(row.xid), id: BigInt(row.id) }),
    type: entry.type,
    occurredAt: row.createdAt.toISOString(),
    actor: user && !userIsSubject ? user : { type: 'system', id: null },
    subject,
    organization: row.organizationId ? { id: row.organizationId, slug: row.organizationSlug, name: row.organizationName } : null,
    ip: row.ip,
    userAgent: row.userAgent,
    data: { ...detail, ...entry.data },
  };
}

function parseQuery(query: StreamQuery): { after: StreamPosition; types: EventType[] | null; limit: number } {
  const after = query.after === undefined || query.after === '' ? STREAM_START : typeof query.after === 'string' ? positionOf(query.after) : undefined;
  if (!after) throw badRequest('`after` must be an event id or the `next` of an earlier answer (evt_ and 26 base32 digits).');
  let types: EventType[] | null = null;
  if (query.types !== undefined && query.types !== '') {
    if (typeof query.types !== 'string') throw badRequest('`types` is one comma-separated list of event types, e.g. types=user.signed_in,token.created.');
    const names = [...new Set(query.types.split(',').map((t) => t.trim()).filter(Boolean))];
    if (names.length > TYPES_MAX) throw badRequest(`\`types\` names at most ${TYPES_MAX} types.`);
    const unknown = names.filter((name) => !Object.hasOwn(EVENT_DATA_SCHEMAS, name));
    if (unknown.length) throw badRequest(`Unknown event type${unknown.length > 1 ? 's' : ''} in \`types\`: ${unknown.slice(0, 5).map((t) => JSON.stringify(t.slice(0, 60))).join(', ')}; docs/events.md lists them.`);
    types = names as EventType[];
  }
  let limit = EVENTS_PAGE_DEFAULT;
  if (query.limit !== undefined && query.limit !== '') {
    limit = typeof query.limit === 'string' && /^\d{1,4}$/.test(query.limit) ? Number(query.limit) : NaN;
    if (!(limit >= 1 && limit <= EVENTS_PAGE_MAX)) throw badRequest(`\`limit\` must be a whole number from 1 to ${EVENTS_PAGE_MAX}.`);
  }
  return { after, types, limit };
}
