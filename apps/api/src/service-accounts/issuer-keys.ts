import { Injectable } from '@nestjs/common';
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { Clock } from '../common/clock.js';
import { issuerProblem, providerFetch } from '../common/pinned-fetch.js';
import { AppConfig } from '../config/app-config.js';

/** How long a trusted issuer's JWKS is used before it is fetched again on the next exchange. */
export const ISSUER_KEYS_MAX_AGE_SECONDS = 600;
/**
 * The least time between two fetches of an issuer's discovery and JWKS: a token naming an unknown
 * `kid` (a rotation) makes one fetch, but no more than one per cooldown, so a caller sending
 * made-up kids cannot make Prospect fetch on every request. A failed fetch waits as long.
 */
export const ISSUER_KEYS_COOLDOWN_SECONDS = 60;
/** How long one fetch (discovery or JWKS) may take. */
const FETCH_TIMEOUT_MS = 5000;

/** The issuer's keys could not be had (unreachable, refused address, not an OpenID provider): a sentence for its admins. */
export class IssuerUnavailable extends Error {}

interface IssuerEntry {
  /** When the keys (or the failure) were last fetched, by the Clock. */
  fetchedAt: number;
  keys?: JWTVerifyGetKey;
  failure?: IssuerUnavailable;
  /** A fetch under way: concurrent exchanges wait for the same one. */
  loading?: Promise<IssuerEntry>;
}

/**
 * The signing keys of the issuers service accounts trust (workload identity federation, issue
 * #45), by OpenID Connect Discovery (`/.well-known/openid-configuration` → `jwks_uri`), each
 * fetched through common/pinned-fetch.ts (the identity providers' address rules: https, private
 * addresses only with FEDERATION_ALLOW_PRIVATE_ISSUERS, the connection pinned to the checked
 * address; and loopback, http included, only with TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS, for
 * development: an issuer registered while it was on is refused here once it is off). Kept per issuer for ISSUER_KEYS_MAX_AGE_SECONDS,
 * refreshed once on an unknown `kid` after ISSUER_KEYS_COOLDOWN_SECONDS. Only an issuer some
 * federation trusts is ever asked (the grant checks that first), so the cache is bounded by what
 * admins configured. Each replica keeps its own.
 */
@Injectable()
export class IssuerKeys {
  private readonly fetch: ReturnType<typeof providerFetch>;
  private readonly issuers = new Map<string, IssuerEntry>();

  constructor(
    config: AppConfig,
    private readonly clock: Clock,
  ) {
    this.fetch = providerFetch({
      allowPrivate: () => config.federationAllowPrivateIssuers,
      allowLoopback: () => config.tokenExchangeAllowLoopbackIssuers,
      ownUrl: () => config.publicUrl,
    });
  }

  /** A key getter for jose's jwtVerify: the issuer's key by the token's header. @throws IssuerUnavailable */
  async keyGetter(issuer: string): Promise<JWTVerifyGetKey> {
    let entry = this.issuers.get(issuer);
    if (!entry || this.age(entry) >= (entry.failure ? ISSUER_KEYS_COOLDOWN_SECONDS : ISSUER_KEYS_MAX_AGE_SECONDS)) entry = await this.load(issuer);
    if (entry.failure) throw entry.failure;
    const first = entry;
    return async (header, token) => {
      try {
        return await first.keys!(header, token);
      } catch (err) {
        // A key the set lacks may be a rotation: fetch once more, unless the last fetch was a moment ago.
        if (!(err instanceof joseErrors.JWKSNoMatchingKey) || this.age(this.issuers.get(issuer) ?? first) < ISSUER_KEYS_COOLDOWN_SECONDS) throw err;
        const again = await this.load(issuer);
        if (again.failure) throw again.failure;
        return again.keys!(header, token);
      }
    };
  }

  private age(entry: IssuerEntry): number {
    return (this.clock.now().getTime() - entry.fetchedAt) / 1000;
  }

  private load(issuer: string): Promise<IssuerEntry> {
    const current = this.issuers.get(issuer);
    if (current?.loading) return current.loading;
    const loading = this.fetchKeys(issuer).then(
      (keys): IssuerEntry => ({ fetchedAt: this.clock.now().getTime(), keys }),
      (err: unknown): IssuerEntry => ({ fetchedAt: this.clock.now().getTime(), failure: err instanceof IssuerUnavailable ? err : new IssuerUnavailable(`${issuer} could not be reached: ${(err as Error).message}`) }),
    );
    const placeholder: IssuerEntry = { ...(current ?? { fetchedAt: 0 }), loading };
    this.issuers.set(issuer, placeholder);
    return loading.then((entry) => {
      this.issuers.set(issuer, entry);
      return entry;
    });
  }

  private async fetchKeys(issuer: string): Promise<JWTVerifyGetKey> {
    // OpenID Connect Discovery 1.0 §4: the issuer, without a trailing slash, and the well-known path.
    const configuration = await this.getJson(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`);
    // §4.3: the document's issuer must be the one asked, exactly.
    if (configuration.issuer !== issuer) throw new IssuerUnavailable(`${issuer}'s discovery document names another issuer (${String(configuration.issuer)}).`);
    const jwksUri = configuration.jwks_uri;
    if (typeof jwksUri !== 'string' || issuerProblem(jwksUri)) throw new IssuerUnavailable(`${issuer}'s discovery document has no usable jwks_uri.`);
    const jwks = await this.getJson(jwksUri);
    if (!Array.isArray(jwks.keys)) throw new IssuerUnavailable(`${jwksUri} is not a JWKS.`);
    return createLocalJWKSet(jwks as unknown as JSONWebKeySet);
  }

  private async getJson(url: string): Promise<Record<string, unknown>> {
    const answer = await this.fetch(url, { method: 'GET', headers: { accept: 'application/json' }, body: undefined, redirect: 'manual', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (answer.status !== 200) throw new IssuerUnavailable(`${url} answered ${answer.status}.`);
    const body: unknown = await answer.json().catch(() => undefined);
    if (!body || typeof body !== 'object' || Array.isArray(body)) throw new IssuerUnavailable(`${url} did not answer a JSON object.`);
    return body as Record<string, unknown>;
  }
}
