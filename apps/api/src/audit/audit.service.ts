import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Clock } from '../common/clock.js';
import type { AuthEvent, AuthEventType } from './auth-event.entity.js';
import { AuditEventsRepository } from './audit-events.repository.js';

export interface AuditEntry {
  userId?: string | null;
  ip?: string | null;
  detail?: AuthEvent['detail'];
}

@Injectable()
export class AuditService {
  constructor(
    private readonly events: AuditEventsRepository,
    private readonly clock: Clock,
  ) {}

  /** Records an event; pass the transaction's manager to commit it with the change it describes. */
  record(type: AuthEventType, entry: AuditEntry = {}, manager?: EntityManager): Promise<void> {
    return this.events.insert({ type, userId: entry.userId ?? null, ip: entry.ip ?? null, detail: entry.detail ?? {}, createdAt: this.clock.now() }, manager);
  }
}
