import { Injectable } from '@nestjs/common';
import type { Scope } from '@prospect/contract';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { AuditService } from '../audit/audit.service.js';
import { badRequest, conflict, notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { isUniqueViolation } from '../database/sql.js';
import { DeviceLoginsRepository } from '../device-login/device-logins.repository.js';
import { TokensService } from '../tokens/tokens.service.js';
import type { OAuthClient } from './oauth-client.entity.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';

/** The public OAuth clients: `prospect-cli` built in, more registered by an admin. */
@Injectable()
export class OAuthClientsService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly clients: OAuthClientsRepository,
    private readonly deviceLogins: DeviceLoginsRepository,
    private readonly tokens: TokensService,
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
   * the person approving is the check). `id` and `name` are validated by the caller;
   * `allowedScopes` are what it may ask for (at least one).
   * @throws ApiException 409 when the id is taken.
   */
  async register(input: { id: string; name: string; allowedScopes: readonly Scope[] }, adminId: string, ip: string | null): Promise<OAuthClient> {
    const allowedScopes = input.allowedScopes.join(' ');
    try {
      return await this.db.transaction(async (tx) => {
        const client: OAuthClient = { id: input.id, name: input.name, allowedScopes, builtIn: false, createdByUserId: adminId, createdAt: this.clock.now(), disabledAt: null };
        await this.clients.insert(tx, client);
        await this.audit.record('oauth.client_register', { userId: adminId, ip, detail: { clientId: input.id, allowedScopes } }, tx);
        return client;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`A client with the id ${input.id} already exists.`);
      throw err;
    }
  }

  /**
   * Any of: a new name, new allowed scopes, disabled or enabled; in one locked transaction, each
   * change audited. New sign-ins ask within new scopes; grants made before keep theirs (disable
   * the client to end them). Disabling: see disableIn. Enabling lets it start device logins again
   * (what was revoked stays revoked).
   * @returns the client as it is now and how many access tokens were revoked.
   * @throws ApiException 404 for an unknown client, 400 for a change the built-in client does not take.
   */
  change(
    id: string,
    changes: { name?: string; allowedScopes?: readonly Scope[]; disabled?: boolean },
    adminId: string,
    ip: string | null,
  ): Promise<{ client: OAuthClient; revoked: number }> {
    return this.db.transaction(async (tx) => {
      let client = await this.existing(tx, id);
      if (changes.name !== undefined || changes.allowedScopes !== undefined) {
        if (changes.allowedScopes && client.builtIn) throw badRequest(`The scopes of ${id} are built in: it signs the CLI in, with everything the CLI does.`);
        const next = { name: changes.name ?? client.name, allowedScopes: changes.allowedScopes?.join(' ') ?? client.allowedScopes };
        await this.clients.update(tx, id, next);
        await this.audit.record('oauth.client_update', { userId: adminId, ip, detail: { clientId: id, ...next } }, tx);
        client = { ...client, ...next };
      }
      if (changes.disabled === true) return this.disableIn(tx, client, adminId, ip);
      if (changes.disabled === false) {
        await this.clients.update(tx, id, { disabledAt: null });
        await this.audit.record('oauth.client_enable', { userId: adminId, ip, detail: { clientId: id } }, tx);
        client = { ...client, disabledAt: null };
      }
      return { client, revoked: 0 };
    });
  }

  /**
   * Disables a client in `tx`, locked: it starts no device login (invalid_client), its logins not
   * redeemed yet are cancelled, and every live token and refresh family it holds is revoked (every
   * replica hears of it). A redeem racing with this either committed first (and its family is
   * revoked here) or finds the client disabled. Idempotent.
   */
  private async disableIn(tx: EntityManager, client: OAuthClient, adminId: string, ip: string | null): Promise<{ client: OAuthClient; revoked: number }> {
    if (client.builtIn) throw badRequest(`${client.id} is built in: the CLI signs in through it, so it cannot be disabled or deleted.`);
    const disabledAt = client.disabledAt ?? this.clock.now();
    await this.clients.update(tx, client.id, { disabledAt });
    const cancelled = await this.deviceLogins.cancelUnredeemedOfClient(tx, client.id);
    let revoked = 0;
    for (const family of await this.deviceLogins.familiesWithLiveTokens(tx, client.id)) revoked += await this.tokens.revokeFamily(family, 'client disabled', ip, tx);
    await this.audit.record('oauth.client_disable', { userId: adminId, ip, detail: { clientId: client.id, cancelled, revoked } }, tx);
    return { client: { ...client, disabledAt }, revoked };
  }

  /**
   * Deletes a client: disabled first (its tokens revoked), then its device logins and itself. The
   * audit events keep its id. The id may be registered again, as a new client.
   */
  async remove(id: string, adminId: string, ip: string | null): Promise<void> {
    await this.db.transaction(async (tx) => {
      await this.disableIn(tx, await this.existing(tx, id), adminId, ip);
      await this.deviceLogins.deleteAllOfClient(tx, id);
      await this.clients.delete(tx, id);
      await this.audit.record('oauth.client_delete', { userId: adminId, ip, detail: { clientId: id } }, tx);
    });
  }

  private async existing(tx: EntityManager, id: string): Promise<OAuthClient> {
    const client = await this.clients.lockedById(tx, id);
    if (!client) throw notFound(`No client with the id ${id}.`);
    return client;
  }
}
