import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { ClientIdSchema } from '@prospect/contract';
import type { EntityManager, Repository } from 'typeorm';
import { OAuthClient } from './oauth-client.entity.js';

const isClientId = (id: string) => ClientIdSchema.safeParse(id).success;

/** Every statement on `oauth_clients`: TypeORM's entity repository (none of them is hot). */
@Injectable()
export class OAuthClientsRepository {
  constructor(@InjectRepository(OAuthClient) private readonly clients: Repository<OAuthClient>) {}

  findById(id: string): Promise<OAuthClient | null> {
    // An id no client can have (a NUL, 2,000 characters…) is no client, without asking Postgres.
    if (!isClientId(id)) return Promise.resolve(null);
    return this.clients.findOneBy({ id });
  }

  /** Built-in first, then by registration. */
  list(): Promise<OAuthClient[]> {
    return this.clients.find({ order: { builtIn: 'DESC', createdAt: 'ASC', id: 'ASC' } });
  }

  /** Changes some of a client's fields in `tx`; false when there is no such client. */
  async update(tx: EntityManager, id: string, changes: Partial<Pick<OAuthClient, 'name' | 'allowedScopes' | 'disabledAt'>>): Promise<boolean> {
    return ((await tx.getRepository(OAuthClient).update({ id }, changes)).affected ?? 0) > 0;
  }

  /** The client, locked for the rest of `tx` (a change is decided on what it is now). */
  lockedById(tx: EntityManager, id: string): Promise<OAuthClient | null> {
    if (!isClientId(id)) return Promise.resolve(null);
    return tx.getRepository(OAuthClient).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  async delete(tx: EntityManager, id: string): Promise<void> {
    await tx.getRepository(OAuthClient).delete({ id });
  }

  /** Insert, not save: save would quietly overwrite a client with the same id (a unique violation instead). */
  async insert(tx: EntityManager, client: OAuthClient): Promise<void> {
    await tx.getRepository(OAuthClient).insert(client);
  }
}
