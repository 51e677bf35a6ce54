import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { currentRequest } from '../common/request-context.js';
import type { AuthEvent, AuthEventType } from './auth-event.entity.js';
import { AuditEventsRepository } from './audit-events.repository.js';
import type { Tx } from '../database/tx.js';

export interface AuditEntry {
  userId?: string | null;
  ip?: string | null;
  /**
   * The caller's User-Agent header (clipped to USER_AGENT_MAX). None: the User-Agent of the request
   * being handled, if any (common/request-context.ts), so every event a request is behind has it.
   */
  userAgent?: string | null;
  detail?: AuthEvent['detail'];
  /** When the change it records happened (the caller's clock reading), if not now. */
  at?: Date;
  /** The organization it belongs to: it shows in that organization's log. */
  organizationId?: string | null;
}

/** The longest User-Agent kept: enough for any real browser's, not a place to store a payload. */
export const USER_AGENT_MAX = 300;

/** The header as kept: clipped, and none for an empty one. */
export const clipUserAgent = (userAgent: string | null | undefined): string | null => userAgent?.slice(0, USER_AGENT_MAX) || null;

/** The entry's User-Agent, or else the request's being handled, clipped; null for background work. */
const userAgentOf = (entry: AuditEntry): string | null => clipUserAgent(entry.userAgent ?? currentRequest()?.userAgent);

@Injectable()
export class AuditService {
  constructor(
    private readonly events: AuditEventsRepository,
    private readonly clock: Clock,
  ) {}

  /** Records an event; pass the caller's Tx to commit it with the change it describes. */
  record(type: AuthEventType, entry: AuditEntry = {}, tx?: Tx): Promise<void> {
    return this.events.insert(
      { type, userId: entry.userId ?? null, ip: entry.ip ?? null, userAgent: userAgentOf(entry), detail: entry.detail ?? {}, createdAt: entry.at ?? this.clock.now(), organizationId: entry.organizationId ?? null },
      tx,
    );
  }

  /** One event of `type` per entry, in one statement, in the caller's Tx (a revocation's sessions); none for no entries. */
  async recordEach(type: AuthEventType, entries: readonly AuditEntry[], tx?: Tx): Promise<void> {
    if (!entries.length) return;
    const now = this.clock.now();
    await this.events.insertEach(type, entries.map((e) => ({ userId: e.userId ?? null, ip: e.ip ?? null, userAgent: userAgentOf(e), detail: e.detail ?? {}, createdAt: e.at ?? now })), tx);
  }

  /** Forgets, in `tx`, the address and details of the person's events (their account is being deleted; the events stay). */
  forgetDetailsOf(tx: Tx, userId: string): Promise<void> {
    return this.events.forgetDetailsOf(tx, userId);
  }

  /** Many events of one type at once, in one statement (the batched refusals): a database that is down costs one timeout, not one per event. */
  recordMany(type: AuthEventType, events: ReadonlyArray<{ ip: string | null; detail: Record<string, unknown>; organizationId?: string | null }>): Promise<void> {
    return this.events.insertMany(type, events, this.clock.now());
  }

  /** One person's events of `types`, newest first, for their security log. */
  listForUser(userId: string, types: readonly AuthEventType[], limit: number, offset: number) {
    return this.events.listForUser(userId, types, limit, offset);
  }

  /** An organization's events, newest first, for its log: who (the actor's address, if the account still exists) did what from where. */
  listForOrganization(organizationId: string, limit: number, offset: number) {
    return this.events.listForOrganization(organizationId, limit, offset);
  }

  /** At most `limit` events older than `before`, in `tx` (retention); how many. */
  purgeOlderThan(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.events.deleteOlderThan(tx, before, limit);
  }
}
