import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { Clock } from '../common/clock.js';
import { Sql } from '../database/sql.js';
import { AuthEvent, type AuthEventType } from './auth-event.entity.js';

export interface AuditEntry {
  userId?: string | null;
  ip?: string | null;
  detail?: AuthEvent['detail'];
}

const INSERT_EVENT = `INSERT INTO auth_events (type, user_id, ip, detail, created_at) VALUES ($1, $2, $3, $4, $5)`;

@Injectable()
export class AuditService {
  constructor(
    @InjectRepository(AuthEvent) private readonly events: Repository<AuthEvent>,
    private readonly sql: Sql,
    private readonly clock: Clock,
  ) {}

  /**
   * Records an event; pass the transaction's manager to commit it with the change it describes.
   * Plain SQL: it runs on hot paths (every device-login start), where building the
   * statement through the repository cost more CPU than the database spent on it.
   */
  async record(type: AuthEventType, entry: AuditEntry = {}, manager?: EntityManager): Promise<void> {
    const values = [type, entry.userId ?? null, entry.ip ?? null, JSON.stringify(entry.detail ?? {}), this.clock.now()];
    if (manager) await manager.query(INSERT_EVENT, values);
    else await this.sql.rows(INSERT_EVENT, values);
  }

  /** Most recent first; for tests and admin views. */
  list(limit = 100): Promise<AuthEvent[]> {
    return this.events.find({ order: { id: 'DESC' }, take: limit });
  }
}
