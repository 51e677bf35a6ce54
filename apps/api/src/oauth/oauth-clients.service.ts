import { Injectable } from '@nestjs/common';
import { CLIENT_SECRET_PREFIX, type ClientType, type Scope } from '@prospect/contract';
import { GrantsService } from '../grants/grants.service.js';
import { AuditService } from '../audit/audit.service.js';
import { badRequest, conflict, notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { constantTimeEqual, generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { isUniqueViolation } from '../database/sql.js';
import { DeviceLoginService } from '../device-login/device-login.service.js';
import { TokensService } from '../tokens/tokens.service.js';
import { AuthorizationCodesRepository } from './authorization-codes.repository.js';
import type { OAuthClient } from './oauth-client.entity.js';
import { OAuthClientsRepository } from './oauth-clients.repository.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { OutboundUrlRefused, OutboundUrls } from '../webhooks/outbound-url.js';

/** What registering a client asks for: who it is, what it may ask for, and how it signs people in. */
export interface NewClient {
  id: string;
  name: string;
  allowedScopes: readonly Scope[];
  type?: ClientType;
  redirectUris?: readonly string[];
  allowedOrigins?: readonly string[];
  backchannelLogoutUri?: string | null;
}

/** What an admin may change of a client. */
export interface ClientChanges {
  name?: string;
  allowedScopes?: readonly Scope[];
  redirectUris?: readonly string[];
  allowedOrigins?: readonly string[];
  disabled?: boolean;
  backchannelLogoutUri?: string | null;
}

/**
 * `admin` is granted only through a device login approved in sudo mode, and lasts
 * ADMIN_GRANT_SECONDS (issue #31): the code flow never grants it, so a client with redirect URIs
 * may not be allowed it.
 */
function refuseAdminForCodeFlow(client: { id: string; allowedScopes: readonly string[]; redirectUris: readonly string[] }): void {
  if (client.redirectUris.length && client.allowedScopes.includes('admin')) {
    throw badRequest(
      `${client.id} cannot be allowed “admin” and have redirect URIs: the authorization code flow never grants administration (it is asked for in a device login and approved in sudo mode). Register a separate client for the code flow.`,
    );
  }
}

/** The OAuth clients: `prospect-cli` built in, more registered by an admin, public or confidential. */
@Injectable()
export class OAuthClientsService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly clients: OAuthClientsRepository,
    private readonly deviceLogins: DeviceLoginService,
    private readonly tokens: TokensService,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly codes: AuthorizationCodesRepository,
    private readonly outboundUrls: OutboundUrls,
    private readonly grants: GrantsService,
  ) {}

  /** A back-channel logout URI under the webhook URL rules (issue #46): 400 naming what is wrong. */
  private async vetLogoutUri(uri: string): Promise<string> {
    try {
      await this.outboundUrls.vet(uri);
    } catch (err) {
      if (err instanceof OutboundUrlRefused) throw badRequest(`backchannelLogoutUri: ${err.message}`);
      throw err;
    }
    return uri;
  }

  find(id: string): Promise<OAuthClient | null> {
    return this.clients.findById(id);
  }

  /** Whether `secret` is this confidential client's secret (constant time); false for a public client. */
  async secretMatches(client: OAuthClient, secret: string): Promise<boolean> {
    if (client.type !== 'confidential' || !looksLikeSecret(secret, CLIENT_SECRET_PREFIX)) return false;
    const stored = await this.clients.secretHashOf(client.id);
    return stored !== null && constantTimeEqual(stored, sha256(secret));
  }

  /** Whether an enabled client allows calls from the browser origin `origin` (CORS preflights). */
  anyAllowsOrigin(origin: string): Promise<boolean> {
    return this.clients.anyAllowsOrigin(origin);
  }

  /** Built-in first, then by registration. */
  list(): Promise<OAuthClient[]> {
    return this.clients.list();
  }

  /**
   * Registers a client. A public one (the default) has no secret: the device flow's approving
   * person, or the code flow's PKCE, is the check. A confidential one gets a secret, returned here
   * once, of which only the SHA-256 is kept. Without redirect URIs it has no code flow. `id`,
   * `name`, the URIs and origins are validated by the caller (the contract's schemas);
   * `allowedScopes` are what it may ask for (at least one; not `admin` with redirect URIs).
   * @throws ApiException 409 when the id is taken, 400 for `admin` with redirect URIs.
   */
  async register(input: NewClient, adminId: string, ip: string | null): Promise<{ client: OAuthClient; clientSecret?: string }> {
    const redirectUris = [...new Set(input.redirectUris ?? [])];
    const allowedOrigins = [...new Set(input.allowedOrigins ?? [])];
    refuseAdminForCodeFlow({ id: input.id, allowedScopes: input.allowedScopes, redirectUris });
    const allowedScopes = input.allowedScopes.join(' ');
    const type = input.type ?? 'public';
    const clientSecret = type === 'confidential' ? generateSecret(CLIENT_SECRET_PREFIX) : undefined;
    const backchannelLogoutUri = input.backchannelLogoutUri ? await this.vetLogoutUri(input.backchannelLogoutUri) : null;
    try {
      return await this.uow.run(async (tx) => {
        const client: OAuthClient = {
          id: input.id,
          name: input.name,
          allowedScopes,
          builtIn: false,
          createdByUserId: adminId,
          createdAt: this.clock.now(),
          disabledAt: null,
          type,
          redirectUris,
          allowedOrigins,
          backchannelLogoutUri,
        };
        await this.clients.insert(tx, { ...client, secretHash: clientSecret ? sha256(clientSecret) : null });
        if (backchannelLogoutUri) await this.clients.setBackchannelLogoutUri(tx, input.id, backchannelLogoutUri);
        await this.audit.record(
          'oauth.client_register',
          { userId: adminId, ip, detail: { clientId: input.id, allowedScopes, type, redirectUris: redirectUris.join(' '), allowedOrigins: allowedOrigins.join(' ') } },
          tx,
        );
        return { client, clientSecret };
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`A client with the id ${input.id} already exists.`);
      throw err;
    }
  }

  /**
   * A confidential client's new secret, returned once; the old one stops working at once (a
   * client that still holds it gets `invalid_client`). Its tokens are not revoked: disable the
   * client for that.
   * @throws ApiException 404 for an unknown client, 400 for a public one.
   */
  rotateSecret(id: string, adminId: string, ip: string | null): Promise<string> {
    return this.uow.run(async (tx) => {
      const client = await this.existing(tx, id);
      if (client.type !== 'confidential') throw badRequest(`${id} is a public client: it has no secret (PKCE protects its code flow).`);
      const clientSecret = generateSecret(CLIENT_SECRET_PREFIX);
      await this.clients.setSecretHash(tx, id, sha256(clientSecret));
      await this.audit.record('oauth.client_update', { userId: adminId, ip, detail: { clientId: id, secret: 'replaced' } }, tx);
      return clientSecret;
    });
  }

  /**
   * Any of: a new name, new allowed scopes, disabled or enabled; in one locked transaction, each
   * change audited. New sign-ins ask within new scopes; grants made before keep theirs (disable
   * the client to end them). Disabling: see disableIn. Enabling lets it start device logins again
   * (what was revoked stays revoked).
   * @returns the client as it is now and how many access tokens were revoked.
   * @throws ApiException 404 for an unknown client, 400 for a change the built-in client does not take.
   */
  async change(id: string, changes: ClientChanges, adminId: string, ip: string | null): Promise<{ client: OAuthClient; revoked: number }> {
    const logoutUri = changes.backchannelLogoutUri ? await this.vetLogoutUri(changes.backchannelLogoutUri) : changes.backchannelLogoutUri;
    return this.uow.run(async (tx) => {
      let client = await this.existing(tx, id);
      if (logoutUri !== undefined && logoutUri !== client.backchannelLogoutUri) {
        await this.clients.setBackchannelLogoutUri(tx, id, logoutUri);
        await this.audit.record('oauth.client_update', { userId: adminId, ip, detail: { clientId: id, backchannelLogoutUri: logoutUri } }, tx);
        client = { ...client, backchannelLogoutUri: logoutUri };
      }
      const { name, allowedScopes, redirectUris, allowedOrigins } = changes;
      if (name !== undefined || allowedScopes !== undefined || redirectUris !== undefined || allowedOrigins !== undefined) {
        if (allowedScopes && client.builtIn) throw badRequest(`The scopes of ${id} are built in: it signs the CLI in, with everything the CLI does.`);
        if ((redirectUris || allowedOrigins) && client.builtIn) {
          throw badRequest(`The redirect URIs of ${id} are built in: the CLI's loopback (http://127.0.0.1/callback, any port), and nothing else.`);
        }
        const next = {
          name: name ?? client.name,
          allowedScopes: allowedScopes?.join(' ') ?? client.allowedScopes,
          redirectUris: redirectUris ? [...new Set(redirectUris)] : client.redirectUris,
          allowedOrigins: allowedOrigins ? [...new Set(allowedOrigins)] : client.allowedOrigins,
        };
        // The built-in client has both, by design: its `admin` comes only from a device login, as checkScope refuses it in the code flow.
        if (!client.builtIn) refuseAdminForCodeFlow({ id, allowedScopes: next.allowedScopes.split(' '), redirectUris: next.redirectUris });
        await this.clients.updateSettings(tx, id, next);
        const detail = { clientId: id, ...next, redirectUris: next.redirectUris.join(' '), allowedOrigins: next.allowedOrigins.join(' ') };
        await this.audit.record('oauth.client_update', { userId: adminId, ip, detail }, tx);
        client = { ...client, ...next };
      }
      if (changes.disabled === true) return this.disableIn(tx, client, adminId, ip);
      if (changes.disabled === false) {
        await this.clients.setDisabledAt(tx, id, null);
        await this.audit.record('oauth.client_enable', { userId: adminId, ip, detail: { clientId: id } }, tx);
        client = { ...client, disabledAt: null };
      }
      return { client, revoked: 0 };
    });
  }

  /**
   * Disables a client in `tx`, locked: it starts no device login and no authorization
   * (invalid_client), its logins not redeemed yet are cancelled and its codes not exchanged yet
   * used up, and every live token and refresh family it holds (device and code grants alike) is
   * revoked (every replica hears of it). A redeem or an exchange racing with this either committed
   * first (and its family is revoked here) or finds the client disabled. Idempotent.
   */
  private async disableIn(tx: Tx, client: OAuthClient, adminId: string, ip: string | null): Promise<{ client: OAuthClient; revoked: number }> {
    if (client.builtIn) throw badRequest(`${client.id} is built in: the CLI signs in through it, so it cannot be disabled or deleted.`);
    const disabledAt = client.disabledAt ?? this.clock.now();
    await this.clients.setDisabledAt(tx, client.id, disabledAt);
    const cancelled = await this.deviceLogins.cancelUnredeemedOfClient(tx, client.id);
    await this.codes.burnUnused(tx, client.id, null, disabledAt);
    let revoked = 0;
    for (const family of await this.grants.withLiveTokensOfClient(tx, client.id)) revoked += await this.tokens.revokeFamily(family, 'client disabled', ip, tx);
    await this.audit.record('oauth.client_disable', { userId: adminId, ip, detail: { clientId: client.id, cancelled, revoked } }, tx);
    return { client: { ...client, disabledAt }, revoked };
  }

  /**
   * Deletes a client: disabled first (its tokens revoked), then its device logins, its grants and itself. The
   * audit events keep its id. The id may be registered again, as a new client.
   */
  async remove(id: string, adminId: string, ip: string | null): Promise<void> {
    await this.uow.run(async (tx) => {
      await this.disableIn(tx, await this.existing(tx, id), adminId, ip);
      await this.deviceLogins.deleteAllOfClient(tx, id);
      await this.grants.deleteAllOfClient(tx, id);
      await this.clients.delete(tx, id);
      await this.audit.record('oauth.client_delete', { userId: adminId, ip, detail: { clientId: id } }, tx);
    });
  }

  private async existing(tx: Tx, id: string): Promise<OAuthClient> {
    const client = await this.clients.lockedById(tx, id);
    if (!client) throw notFound(`No client with the id ${id}.`);
    return client;
  }
}
