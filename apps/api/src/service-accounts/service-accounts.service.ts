import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import {
  type AddedServiceAccountKey,
  type CreatedServiceAccount,
  type CreatedServiceAccountSecret,
  type CreateServiceAccountFederationRequest,
  SERVICE_ACCOUNT_CLIENT_ID_PREFIX,
  SERVICE_ACCOUNT_SECRET_PREFIX,
  type ServiceAccount,
  type ServiceAccountFederation,
  type UpdateServiceAccountRequest,
} from '@prospect/contract';
import { importJWK, type JWK } from 'jose';
import { AuditService } from '../audit/audit.service.js';
import type { AuthEventType } from '../audit/auth-event.entity.js';
import { badRequest, conflict, notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { type AddressAllowance, checkedAddresses, issuerProblem, ProviderAddressRefused } from '../common/pinned-fetch.js';
import { generateSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { OrganizationTeardown } from '../organizations/organization-teardown.js';
import type { OrgActor } from '../organizations/organizations.service.js';
import { TokenRevocations } from '../tokens/token-revocations.js';
import { TokensService } from '../tokens/tokens.service.js';
import { UsersService } from '../users/users.service.js';
import { type FederationRow, ServiceAccountFederationsRepository } from './service-account-federations.repository.js';
import { type ServiceAccountListing, type ServiceAccountRow, ServiceAccountsRepository } from './service-accounts.repository.js';

/** The signature algorithms a registered key may sign client assertions with, by key type (RFC 7518). */
export const ASSERTION_ALGS_BY_KTY: Record<string, readonly string[]> = { RSA: ['RS256', 'PS256'], EC: ['ES256'], OKP: ['EdDSA'] };
export const ASSERTION_SIGNING_ALGS = Object.values(ASSERTION_ALGS_BY_KTY).flat();
const EC_CURVES: Record<string, string> = { 'P-256': 'ES256' };

/** Members of a private JWK: a key holding any of them is refused, never stored. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * Service accounts of an organization (issue #45), managed by its admins (OrgMembershipGuard has
 * checked the role). Every change is one transaction under the account's row lock, with its event
 * in the organization's log; a change that takes something away (a disable, fewer scopes, a
 * credential deleted, the account deleted) revokes every token the account holds in the same
 * transaction, so it counts at the next request on every replica.
 */
@Injectable()
export class ServiceAccountsService {
  constructor(
    private readonly accounts: ServiceAccountsRepository,
    private readonly federations: ServiceAccountFederationsRepository,
    private readonly uow: UnitOfWork,
    private readonly users: UsersService,
    private readonly tokens: TokensService,
    private readonly revocations: TokenRevocations,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    teardown: OrganizationTeardown,
  ) {
    teardown.attach((tx, organizationId, now) => this.endForOrganization(tx, organizationId, now));
  }

  async create(actor: OrgActor, input: { name: string; scopes: readonly string[] }): Promise<CreatedServiceAccount> {
    const now = this.clock.now();
    const scopes = normalizedScopes(input.scopes);
    const clientId = SERVICE_ACCOUNT_CLIENT_ID_PREFIX + randomBytes(12).toString('base64url');
    return this.uow.run(async (tx) => {
      const id = await this.users.insertServiceAccount(tx, input.name, now);
      await this.accounts.insert(tx, { id, organizationId: actor.organization.id, clientId, name: input.name, scopes, createdBy: actor.userId, createdAt: now });
      await this.record(tx, actor, 'org.service_account_create', { serviceAccountId: id, name: input.name, clientId, scopes }, now);
      return { id, clientId, name: input.name, scopes: splitScopes(scopes) };
    });
  }

  async list(actor: OrgActor): Promise<ServiceAccount[]> {
    const accounts = await this.accounts.listForOrganization(actor.organization.id);
    const federations = await this.federations.listForAccounts(accounts.map((a) => a.id));
    return accounts.map((a) => toServiceAccount(a, federations.filter((f) => f.serviceAccountId === a.id)));
  }

  async get(actor: OrgActor, id: string): Promise<ServiceAccount> {
    const found = (await this.list(actor)).find((a) => a.id === id);
    if (!found) throw noSuchAccount();
    return found;
  }

  /** A new name, scopes, or disabled/enabled. Taking anything away ends its tokens at once. */
  async update(actor: OrgActor, id: string, change: UpdateServiceAccountRequest): Promise<ServiceAccount> {
    const now = this.clock.now();
    const revoked = await this.uow.run(async (tx) => {
      const account = await this.lock(tx, actor, id);
      const name = change.name ?? account.name;
      const scopes = change.scopes ? normalizedScopes(change.scopes) : account.scopes;
      const disabledAt = change.disabled === undefined ? account.disabledAt : change.disabled ? (account.disabledAt ?? now) : null;
      await this.accounts.update(tx, id, { name, scopes, disabledAt }, now);
      if (name !== account.name) await this.users.renameServiceAccount(tx, id, name, now);
      const narrowed = splitScopes(account.scopes).some((s) => !splitScopes(scopes).includes(s));
      const disabled = disabledAt !== null && account.disabledAt === null;
      const detail = {
        serviceAccountId: id,
        name,
        ...(name !== account.name ? { previousName: account.name } : {}),
        ...(scopes !== account.scopes ? { scopes } : {}),
        ...((disabledAt === null) !== (account.disabledAt === null) ? { disabled: disabledAt !== null } : {}),
      };
      await this.record(tx, actor, 'org.service_account_update', detail, now);
      if (narrowed || disabled) await this.revokeTokensIn(tx, id, now, actor.ip);
      return narrowed || disabled;
    });
    if (revoked) this.revocations.userRevoked(id);
    return this.get(actor, id);
  }

  /** Deletes the account: its users row, and with it its tokens and credentials (foreign keys). */
  async delete(actor: OrgActor, id: string): Promise<void> {
    const now = this.clock.now();
    await this.uow.run(async (tx) => {
      const account = await this.lock(tx, actor, id);
      await this.record(tx, actor, 'org.service_account_delete', { serviceAccountId: id, name: account.name }, now);
      await this.users.deleteServiceAccounts(tx, [id]);
    });
    this.revocations.userRevoked(id);
  }

  /** A new client secret, shown this once; only its SHA-256 is kept. */
  async createSecret(actor: OrgActor, id: string, expiresInDays?: number): Promise<CreatedServiceAccountSecret> {
    const now = this.clock.now();
    const clientSecret = generateSecret(SERVICE_ACCOUNT_SECRET_PREFIX);
    const expiresAt = expiresInDays === undefined ? null : new Date(now.getTime() + expiresInDays * 86_400_000);
    return this.uow.run(async (tx) => {
      const account = await this.lock(tx, actor, id);
      const secretId = await this.accounts.insertSecret(tx, id, sha256(clientSecret), now, expiresAt);
      await this.record(tx, actor, 'org.service_account_secret_create', { serviceAccountId: id, name: account.name, secretId, expiresAt: iso(expiresAt) }, now);
      return { id: secretId, clientSecret, expiresAt: iso(expiresAt) };
    });
  }

  /** Deletes a secret; the account's tokens end with it (a leaked secret's tokens must not outlive it). */
  async deleteSecret(actor: OrgActor, id: string, secretId: string): Promise<void> {
    const now = this.clock.now();
    await this.uow.run(async (tx) => {
      const account = await this.lock(tx, actor, id);
      if (!(await this.accounts.deleteSecret(tx, id, secretId))) throw notFound('No such secret of this service account.');
      await this.record(tx, actor, 'org.service_account_secret_delete', { serviceAccountId: id, name: account.name, secretId }, now);
      await this.revokeTokensIn(tx, id, now, actor.ip);
    });
    this.revocations.userRevoked(id);
  }

  /**
   * Registers a public key for private_key_jwt (RFC 7523). It must import with jose as a public
   * key of a type and curve listed in ASSERTION_ALGS_BY_KTY; its `kid` is its own or, without one,
   * its RFC 7638 thumbprint. A private key is refused and never stored.
   */
  async addKey(actor: OrgActor, id: string, jwk: Record<string, unknown>): Promise<AddedServiceAccountKey> {
    const publicJwk = await checkedPublicJwk(jwk);
    const now = this.clock.now();
    return this.uow.run(async (tx) => {
      const account = await this.lock(tx, actor, id);
      const keyId = await this.accounts.insertKey(tx, id, publicJwk.kid, publicJwk, now);
      if (!keyId) throw conflict(`This service account has a key with kid “${publicJwk.kid}” already: delete it first, or give the new key another kid.`);
      await this.record(tx, actor, 'org.service_account_key_add', { serviceAccountId: id, name: account.name, keyId, kid: publicJwk.kid }, now);
      return { id: keyId, kid: publicJwk.kid };
    });
  }

  async deleteKey(actor: OrgActor, id: string, keyId: string): Promise<void> {
    const now = this.clock.now();
    await this.uow.run(async (tx) => {
      const account = await this.lock(tx, actor, id);
      const deleted = await this.accounts.deleteKey(tx, id, keyId);
      if (!deleted) throw notFound('No such key of this service account.');
      await this.record(tx, actor, 'org.service_account_key_delete', { serviceAccountId: id, name: account.name, keyId, kid: deleted.kid }, now);
      await this.revokeTokensIn(tx, id, now, actor.ip);
    });
    this.revocations.userRevoked(id);
  }

  /**
   * Trusts an external OIDC issuer for the account (workload identity federation): its tokens with
   * this audience (default: this service's issuer, PUBLIC_URL) whose claims meet every condition
   * may be exchanged for the account's tokens. The issuer follows the identity providers' rules
   * (https; a private address only with FEDERATION_ALLOW_PRIVATE_ISSUERS) and, stricter, is never
   * on loopback (http included) unless TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS (development), checked
   * now as far as its name resolves, and again at every fetch of its keys.
   */
  async addFederation(actor: OrgActor, id: string, input: CreateServiceAccountFederationRequest): Promise<ServiceAccountFederation> {
    const problem = issuerProblem(input.issuer);
    if (problem) throw badRequest(`The issuer ${problem}.`);
    await refuseIssuerAddress(input.issuer, { private: this.config.federationAllowPrivateIssuers, loopback: this.config.tokenExchangeAllowLoopbackIssuers });
    const audience = input.audience ?? this.config.publicUrl;
    const now = this.clock.now();
    return this.uow.run(async (tx) => {
      const account = await this.lock(tx, actor, id);
      const federationId = await this.federations.insert(tx, { serviceAccountId: id, issuer: input.issuer, audience, conditions: input.conditions, createdBy: actor.userId, createdAt: now });
      await this.record(
        tx,
        actor,
        'org.service_account_federation_add',
        { serviceAccountId: id, name: account.name, federationId, issuer: input.issuer, audience, conditions: JSON.stringify(input.conditions) },
        now,
      );
      return toFederation({ id: federationId, serviceAccountId: id, issuer: input.issuer, audience, conditions: input.conditions, createdAt: now });
    });
  }

  /**
   * Stops trusting an issuer; the tokens exchanged through this federation end with it (a token
   * ends with the state it was issued for), and only those: a secret's, a key's or another
   * federation's token was not issued on its say-so. An exchange under way holds the federation's
   * row, so the deletion waits for its commit and revokes its token too. The log says how many ended.
   */
  async deleteFederation(actor: OrgActor, id: string, federationId: string): Promise<void> {
    const now = this.clock.now();
    const ended = await this.uow.run(async (tx) => {
      const account = await this.lock(tx, actor, id);
      const deleted = await this.federations.delete(tx, id, federationId);
      if (!deleted) throw notFound('No such federation of this service account.');
      const revoked = await this.tokens.revokeExchangedThroughIn(tx, federationId, now, actor.ip);
      await this.record(tx, actor, 'org.service_account_federation_delete', { serviceAccountId: id, name: account.name, federationId, issuer: deleted.issuer, tokens: revoked.length }, now);
      return revoked;
    });
    this.revocations.tokensRevoked(ended);
  }

  /** At most `limit` exchanged subject tokens past their `exp`, in `tx` (retention). How many. */
  purgeExpiredSubjectTokens(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.federations.deleteExpiredSubjectTokens(tx, now, limit);
  }

  /** At most `limit` recorded assertion ids past their `exp`, in `tx` (retention): they can no longer be replayed. How many. */
  purgeExpiredAssertions(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.accounts.deleteExpiredAssertions(tx, now, limit);
  }

  /** What /me says of a service account's token: its name and organization; undefined when it is gone. */
  describe(id: string) {
    return this.accounts.describe(id);
  }

  /** An organization is being deleted (OrganizationTeardown, in its `tx`): its service accounts go, with their tokens. */
  private async endForOrganization(tx: Tx, organizationId: string, now: Date): Promise<void> {
    const ended = await this.accounts.lockIdsOfOrganization(tx, organizationId);
    if (!ended.length) return;
    for (const { id, name } of ended) {
      await this.audit.record('org.service_account_delete', { userId: null, ip: null, organizationId, detail: { serviceAccountId: id, name, reason: 'organization deleted' }, at: now }, tx);
    }
    await this.users.deleteServiceAccounts(tx, ended.map((a) => a.id));
    // The deletions' triggers tell every replica's cache; this one is told after its commit too.
    this.uow.afterCommit(tx, () => ended.forEach(({ id }) => this.revocations.userRevoked(id)));
  }

  private async revokeTokensIn(tx: Tx, id: string, now: Date, ip: string | null): Promise<void> {
    await this.tokens.revokeEverythingOfUserIn(tx, id, now, ip);
  }

  private async lock(tx: Tx, actor: OrgActor, id: string): Promise<ServiceAccountRow> {
    const account = await this.accounts.lockInOrganization(tx, actor.organization.id, id);
    if (!account) throw noSuchAccount();
    return account;
  }

  private record(tx: Tx, actor: OrgActor, type: AuthEventType, detail: Record<string, string | number | boolean | null>, at: Date): Promise<void> {
    return this.audit.record(type, { userId: actor.userId, ip: actor.ip, organizationId: actor.organization.id, detail, at }, tx);
  }
}

const noSuchAccount = () => notFound('No such service account in this organization.');

const splitScopes = (scopes: string) => scopes.split(' ').filter(Boolean);

/** The scopes as stored: each once, in the order SERVICE_ACCOUNT_SCOPES lists them (the schema allowed only those). */
function normalizedScopes(scopes: readonly string[]): string {
  return ['profile', 'orgs'].filter((s) => scopes.includes(s)).join(' ');
}

/**
 * @throws 400 when the issuer's host is (or resolves to) an address `allow` refuses. A name that
 * does not resolve now is let through: every fetch of its keys checks again.
 */
async function refuseIssuerAddress(issuer: string, allow: AddressAllowance): Promise<void> {
  try {
    await checkedAddresses(new URL(issuer).hostname, allow);
  } catch (err) {
    if (err instanceof ProviderAddressRefused) throw badRequest(err.message.replace('an identity provider must', 'a trusted issuer must'));
  }
}

function toFederation(row: FederationRow): ServiceAccountFederation {
  return { id: row.id, issuer: row.issuer, audience: row.audience, conditions: row.conditions, createdAt: row.createdAt.toISOString() };
}

function toServiceAccount(row: ServiceAccountListing, federations: FederationRow[]): ServiceAccount {
  return {
    id: row.id,
    clientId: row.clientId,
    name: row.name,
    scopes: splitScopes(row.scopes),
    disabled: row.disabledAt !== null,
    createdAt: row.createdAt.toISOString(),
    secrets: row.secrets.map((s) => ({ id: s.id, createdAt: s.createdAt.toISOString(), expiresAt: iso(s.expiresAt), lastUsedAt: iso(s.lastUsedAt), lastUsedIp: s.lastUsedIp })),
    keys: row.keys.map((k) => ({ id: k.id, kid: k.kid, alg: algOf(k.jwk) ?? 'unknown', createdAt: k.createdAt.toISOString(), lastUsedAt: iso(k.lastUsedAt), lastUsedIp: k.lastUsedIp })),
    federations: federations.map(toFederation),
  };
}

/** The one algorithm a key may sign with: its `alg` when it states one, else its type's first (EC: by curve). */
export function algOf(jwk: Record<string, unknown>): string | undefined {
  const kty = String(jwk.kty);
  const allowed = ASSERTION_ALGS_BY_KTY[kty];
  if (!allowed) return undefined;
  if (typeof jwk.alg === 'string') return allowed.includes(jwk.alg) ? jwk.alg : undefined;
  if (kty === 'EC') return EC_CURVES[String(jwk.crv)];
  if (kty === 'OKP') return jwk.crv === 'Ed25519' ? 'EdDSA' : undefined;
  return allowed[0];
}

/** The JWK as stored: public members only, with a `kid`. @throws 400 saying what is wrong with it. */
async function checkedPublicJwk(jwk: Record<string, unknown>): Promise<Record<string, unknown> & { kid: string }> {
  if (PRIVATE_MEMBERS.some((m) => m in jwk)) throw badRequest('This JWK holds private key material: register the public key only (and keep the private one secret).');
  const alg = algOf(jwk);
  if (!alg) throw badRequest(`Unsupported key: use an RSA key (RS256, PS256), an EC P-256 key (ES256) or an Ed25519 key (EdDSA).`);
  if (jwk.kid !== undefined && (typeof jwk.kid !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(jwk.kid))) throw badRequest('`kid` must be 1 to 200 visible ASCII characters.');
  if (jwk.kty === 'RSA' && typeof jwk.n === 'string' && Buffer.from(jwk.n, 'base64url').length < 256) throw badRequest('An RSA key must have at least 2048 bits.');
  const { kty, crv, x, y, n, e } = jwk as Record<string, string | undefined>;
  const publicOnly = Object.fromEntries(Object.entries({ kty, crv, x, y, n, e }).filter(([, v]) => v !== undefined)) as JWK;
  try {
    await importJWK(publicOnly, alg);
  } catch {
    throw badRequest('This JWK is not a valid public key of its type.');
  }
  const { calculateJwkThumbprint } = await import('jose');
  const kid = typeof jwk.kid === 'string' ? jwk.kid : await calculateJwkThumbprint(publicOnly);
  return { ...publicOnly, alg, kid };
}
