import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { OAuthClient } from './oauth-client.entity.js';

/** Every statement on `oauth_clients`: TypeORM's entity repository (none of them is hot). */
@Injectable()
export class OAuthClientsRepository {
  constructor(@InjectRepository(OAuthClient) private readonly clients: Repository<OAuthClient>) {}

  findById(id: string): Promise<OAuthClient | null> {
    return this.clients.findOneBy({ id });
  }

  /** Built-in first, then by registration. */
  list(): Promise<OAuthClient[]> {
    return this.clients.find({ order: { builtIn: 'DESC', createdAt: 'ASC', id: 'ASC' } });
  }

  /** Insert, not save: save would quietly overwrite a client with the same id (a unique violation instead). */
  async insert(tx: EntityManager, client: OAuthClient): Promise<void> {
    await tx.getRepository(OAuthClient).insert(client);
  }
}
