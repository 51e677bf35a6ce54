import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service.js';
import { conflict } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { isUniqueViolation } from '../database/sql.js';
import type { OAuthClient } from './oauth-client.entity.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';

/** The public OAuth clients: `prospect-cli` built in, more registered by an admin. */
@Injectable()
export class OAuthClientsService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly clients: OAuthClientsRepository,
    private readonly clock: Clock,
    private readonly audit: AuditService,
  ) {}

  find(id: string): Promise<OAuthClient | null> {
    return this.clients.findById(id);
  }

  /** Built-in first, then by registration. */
  list(): Promise<OAuthClient[]> {
    return this.clients.list();
  }

  /**
   * Registers a public client (no secret: it signs people in through the device flow, where
   * the person approving is the check). `id` and `name` are validated by the caller.
   * @throws ApiException 409 when the id is taken.
   */
  async register(input: { id: string; name: string }, adminId: string, ip: string | null): Promise<OAuthClient> {
    try {
      return await this.db.transaction(async (tx) => {
        const client: OAuthClient = { id: input.id, name: input.name, builtIn: false, createdByUserId: adminId, createdAt: this.clock.now() };
        await this.clients.insert(tx, client);
        await this.audit.record('oauth.client_register', { userId: adminId, ip, detail: { clientId: input.id } }, tx);
        return client;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`A client with the id ${input.id} already exists.`);
      throw err;
    }
  }
}
