import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { ClientIdSchema } from '@prospect/contract';
import type { EntityManager, Repository } from 'typeorm';
import { Sql } from '../database/sql.js';
import { OAuthClient } from './oauth-client.entity.js';

const isClientId = (id: string) => ClientIdSchema.safeParse(id).success;

/** Every statement on `oauth_clients`: TypeORM's entity repository, and the CORS check on the pool (Sql). */
@Injectable()
export class OAuthClientsRepository {
  constructor(
    @InjectRepository(OAuthClient) private readonly clients: Repository<OAuthClient>,
    private readonly sql: Sql,
  ) {}

  findById(id: string): Promise<OAuthClient | null> {
    // An id no client can have (a NUL, 2,000 characters…) is no client, without asking Postgres.
    if (!isClientId(id)) return Promise.resolve(null);
    return this.clients.findOneBy({ id });
  }

  /** Built-in first, then by registration. */
  list(): Promise<OAuthClient[]> {
    return this.clients.find({ order: { builtIn: 'DESC', createdAt: 'ASC', id: 'ASC' } });
  }

  /** A confidential client's secret's hash; null for a public (or unknown) client. */
  async secretHashOf(id: string): Promise<Buffer | null> {
    if (!isClientId(id)) return null;
    const found = await this.clients.findOne({ select: { id: true, secretHash: true }, where: { id } });
    return found?.secretHash ?? null;
  }

  /** Whether an enabled client lists `origin` among its allowed origins (a CORS preflight names no client). */
  async anyAllowsOrigin(origin: string): Promise<boolean> {
    const rows = await this.sql.rows(`SELECT 1 FROM oauth_clients WHERE $1 = ANY (allowed_origins) AND disabled_at IS NULL LIMIT 1`, [origin]);
    return rows.length > 0;
  }

  /** Changes some of a client's fields in `tx`; false when there is no such client. */
  async update(
    tx: EntityManager,
    id: string,
    changes: Partial<Pick<OAuthClient, 'name' | 'allowedScopes' | 'disabledAt' | 'redirectUris' | 'allowedOrigins' | 'secretHash'>>,
  ): Promise<boolean> {
    return ((await tx.getRepository(OAuthClient).update({ id }, changes)).affected ?? 0) > 0;
  }

  /** The client, locked for the rest of `tx` (a change is decided on what it is now). */
  lockedById(tx: EntityManager, id: string): Promise<OAuthClient | null> {
    if (!isClientId(id)) return Promise.resolve(null);
    return tx.getRepository(OAuthClient).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  /**
   * The client, share-locked for the rest of `tx`: an exchange of its code holds this while it
   * makes a grant, so a disable (which locks it for update) either waits and then revokes that
   * grant, or comes first and the exchange finds it disabled.
   */
  sharedById(tx: EntityManager, id: string): Promise<OAuthClient | null> {
    if (!isClientId(id)) return Promise.resolve(null);
    return tx.getRepository(OAuthClient).findOne({ where: { id }, lock: { mode: 'pessimistic_read' } });
  }

  async delete(tx: EntityManager, id: string): Promise<void> {
    await tx.getRepository(OAuthClient).delete({ id });
  }

  /** Insert, not save: save would quietly overwrite a client with the same id (a unique violation instead). */
  async insert(tx: EntityManager, client: OAuthClient): Promise<void> {
    await tx.getRepository(OAuthClient).insert(client);
  }
}
