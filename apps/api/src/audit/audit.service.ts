import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { Clock } from '../common/clock.js';
import { AuthEvent, type AuthEventType } from './auth-event.entity.js';

export interface AuditEntry {
  userId?: string | null;
  ip?: string | null;
  detail?: AuthEvent['detail'];
}

@Injectable()
export class AuditService {
  constructor(
    @InjectRepository(AuthEvent) private readonly events: Repository<AuthEvent>,
    private readonly clock: Clock,
  ) {}

  /** Records an event; pass the transaction's manager to commit it with the change it describes. */
  async record(type: AuthEventType, entry: AuditEntry = {}, manager?: EntityManager): Promise<void> {
    const repo = manager ? manager.getRepository(AuthEvent) : this.events;
    await repo.insert({
      type,
      userId: entry.userId ?? null,
      ip: entry.ip ?? null,
      detail: entry.detail ?? {},
      createdAt: this.clock.now(),
    });
  }

  /** Most recent first; for tests and admin views. */
  list(limit = 100): Promise<AuthEvent[]> {
    return this.events.find({ order: { id: 'DESC' }, take: limit });
  }
}
