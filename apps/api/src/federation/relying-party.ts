import { Injectable, Logger } from '@nestjs/common';
import * as oidc from 'openid-client';
import { isLoopbackHost } from '../common/pinned-fetch.js';
import { open, seal } from '../common/sealed.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';
import type { IdentityProviderRow, TokenEndpointAuthMethod } from './identity-providers.repository.js';
import { addressVerified } from './provider-claims.js';
import { ProviderAddressRefused, ProviderNetwork } from './provider-network.js';

/** How long any request to a provider may take (discovery, token, userinfo), in seconds. */
const PROVIDER_TIMEOUT_SECONDS = 10;
const SECRETS_KEY = 'identity-provider-secrets';

/** What a provider said about the person at the end of a sign-in, its id_token validated. */
export interface ProviderIdentity {
  issuer: string;
  subject: string;
  /** Lower case, as the provider gave it; undefined when it gave none. */
  email?: string;
  /** Only the JSON `true` counts (provider-claims.ts addressVerified): a provider that says nothing, or anything else, did not verify it. */
  emailVerified: boolean;
  name?: string;
  /** The id_token's amr and acr (provider-claims.ts showsSecondFactor reads them). */
  amr: string[];
  acr?: string;
  refreshToken?: string;
}

/**
 * Why a provider's answer was not accepted: `reason` for the audit log; `kind` for the page: the
 * provider said no to the person (`refused`), its answer failed a check of the sign-in this
 * browser started (`mismatch`), or it refused Prospect itself (`misconfigured`: its client id or
 * secret, which only an admin can fix).
 */
export class ProviderAnswerRefused extends Error {
  constructor(
    readonly reason: string,
    readonly kind: 'refused' | 'mismatch' | 'misconfigured' = 'mismatch',
  ) {
    super(reason);
  }
}

/** The provider could not be reached, or answered something that is not OAuth. */
export class ProviderUnreachable extends Error {}

export { isLoopbackHost, issuerProblem } from '../common/pinned-fetch.js';

/**
 * Prospect as an OpenID Connect relying party, through openid-client: discovery, the
 * authorization code flow with PKCE, state and nonce (the id_token validated: signature,
 * issuer, audience, expiry, nonce, and `auth_time` when a fresh sign-in was asked for; the
 * authorization response's `iss` checked per RFC 9207 when the provider offers it), and refresh.
 *
 * A provider's Configuration is built from its stored row (metadata discovered when it was
 * created) and kept per row version, so its JWKS is fetched once, not per sign-in; an update of
 * the row makes a new one. The client secret is kept sealed (AES-256-GCM under a server key),
 * opened only to build it.
 */
@Injectable()
export class RelyingParty {
  private readonly logger = new Logger(RelyingParty.name);
  private readonly configurations = new Map<string, { version: number; configuration: oidc.Configuration }>();

  constructor(
    private readonly secrets: ServerSecrets,
    private readonly network: ProviderNetwork,
  ) {}

  /**
   * Reads the provider's discovery document (`{issuer}/.well-known/openid-configuration`, whose
   * `issuer` must be this one) and picks the client authentication it supports.
   * @throws ProviderUnreachable with a sentence saying what went wrong: why the address is refused
   *   (ProviderNetwork), or, for every failure to get a document (refused, closed, timed out, an
   *   error status, not JSON, another issuer), one and the same sentence, so that the answer says
   *   nothing of what listens where on Prospect's network (the log has the detail).
   */
  async discover(issuer: string, clientId: string, clientSecret: string): Promise<{ metadata: Record<string, unknown>; authMethod: TokenEndpointAuthMethod }> {
    let configuration: oidc.Configuration;
    try {
      configuration = await oidc.discovery(new URL(issuer), clientId, { client_secret: clientSecret }, undefined, {
        execute: isLoopbackHost(new URL(issuer).hostname) ? [oidc.allowInsecureRequests] : [],
        timeout: PROVIDER_TIMEOUT_SECONDS,
        [oidc.customFetch]: this.network.fetch,
      });
    } catch (err) {
      const refused = addressRefusalIn(err);
      if (refused) throw new ProviderUnreachable(refused.message);
      this.logger.warn(`could not read the OpenID configuration of ${issuer}: ${describe(err)}`);
      throw new ProviderUnreachable(`Could not read the OpenID configuration of ${issuer}: no OpenID provider answered there. Check the address, and that this server can reach it.`);
    }
    // Functions (its helpers) are dropped: the row keeps the document.
    const metadata = JSON.parse(JSON.stringify(configuration.serverMetadata())) as Record<string, unknown>;
    for (const field of ['authorization_endpoint', 'token_endpoint', 'jwks_uri']) {
      if (typeof metadata[field] !== 'string') throw new ProviderUnreachable(`${issuer} is not an OpenID provider Prospect can use: its configuration has no ${field}.`);
    }
    const responseTypes = metadata.response_types_supported;
    if (Array.isArray(responseTypes) && !responseTypes.includes('code')) throw new ProviderUnreachable(`${issuer} does not offer the authorization code flow (response type "code").`);
    // OpenID Connect Discovery: absent means client_secret_basic.
    const methods = Array.isArray(metadata.token_endpoint_auth_methods_supported) ? (metadata.token_endpoint_auth_methods_supported as string[]) : ['client_secret_basic'];
    const authMethod = methods.includes('client_secret_basic') ? 'client_secret_basic' : methods.includes('client_secret_post') ? 'client_secret_post' : undefined;
    if (!authMethod) throw new ProviderUnreachable(`${issuer} accepts neither client_secret_basic nor client_secret_post for its token endpoint.`);
    return { metadata, authMethod };
  }

  /** The client secret, sealed for the row of provider `providerId` (bound to it). */
  async sealClientSecret(providerId: string, clientSecret: string): Promise<Buffer> {
    return seal(await this.secrets.get(SECRETS_KEY), providerId, 'client-secret', clientSecret);
  }

  /** A provider's refresh token, sealed for the link of (issuer, subject) it belongs to. */
  async sealRefreshToken(issuer: string, subject: string, token: string): Promise<string> {
    return seal(await this.secrets.get(SECRETS_KEY), `${issuer}\n${subject}`, 'refresh-token', token).toString('base64url');
  }

  async openRefreshToken(issuer: string, subject: string, sealed: string): Promise<string | null> {
    return open<string>(await this.secrets.get(SECRETS_KEY), `${issuer}\n${subject}`, 'refresh-token', Buffer.from(sealed, 'base64url'));
  }

  /**
   * Where to send the browser: the provider's authorization endpoint with PKCE (S256), `state`
   * and `nonce`. A fresh sign-in (sudo mode) asks for `prompt=login` and `max_age=0`.
   */
  async authorizationUrl(
    provider: IdentityProviderRow,
    redirectUri: string,
    checks: { state: string; nonce: string; codeVerifier: string },
    options: { loginHint?: string; fresh?: boolean } = {},
  ): Promise<string> {
    const configuration = await this.configurationOf(provider);
    const parameters: Record<string, string> = {
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: provider.scopes,
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: 'S256',
      ...(options.loginHint ? { login_hint: options.loginHint } : {}),
      ...(options.fresh ? { prompt: 'login', max_age: '0' } : {}),
    };
    return oidc.buildAuthorizationUrl(configuration, parameters).href;
  }

  /**
   * The provider's answer at the redirect URI (`callbackUrl`, with its query): the code exchanged
   * with the PKCE verifier, the id_token validated against the state and nonce this browser
   * started with (and `auth_time` for a fresh sign-in), and, when the id_token says nothing of
   * the address, the userinfo endpoint's claims for the same subject.
   * @throws ProviderAnswerRefused, ProviderUnreachable
   */
  async identify(provider: IdentityProviderRow, callbackUrl: URL, checks: { state: string; nonce: string; codeVerifier: string; fresh?: boolean }): Promise<ProviderIdentity> {
    const configuration = await this.configurationOf(provider);
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
        // max_age=0 was asked: auth_time must be now (within openid-client's clock tolerance).
        ...(checks.fresh ? { maxAge: 0 } : {}),
      });
    } catch (err) {
      throw refusalOf(err);
    }
    const claims = tokens.claims();
    if (!claims) throw new ProviderAnswerRefused('no id_token in the answer');
    let profile: Record<string, unknown> = claims;
    if (typeof claims.email !== 'string' && typeof tokens.access_token === 'string' && configuration.serverMetadata().userinfo_endpoint) {
      try {
        profile = { ...(await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub)), ...claims };
      } catch (err) {
        throw refusalOf(err);
      }
    }
    const email = typeof profile.email === 'string' ? profile.email.trim().toLowerCase() : undefined;
    return {
      issuer: claims.iss,
      subject: claims.sub,
      email,
      emailVerified: addressVerified(profile, claims.iss),
      name: typeof profile.name === 'string' ? profile.name : undefined,
      amr: Array.isArray(claims.amr) ? claims.amr.filter((v): v is string => typeof v === 'string') : [],
      acr: typeof claims.acr === 'string' ? claims.acr : undefined,
      refreshToken: typeof tokens.refresh_token === 'string' ? tokens.refresh_token : undefined,
    };
  }

  /**
   * Asks the provider whether the person may still use it: a refresh of its tokens.
   * @returns 'refused' for invalid_grant (the grant is gone: a leaver, a revoked consent), or the
   *   rotated refresh token (or the same one) when it said yes.
   * @throws ProviderUnreachable (and any other error answer): try again later.
   */
  async recheck(provider: IdentityProviderRow, refreshToken: string): Promise<'refused' | { refreshToken: string }> {
    const configuration = await this.configurationOf(provider);
    try {
      const tokens = await oidc.refreshTokenGrant(configuration, refreshToken);
      return { refreshToken: typeof tokens.refresh_token === 'string' ? tokens.refresh_token : refreshToken };
    } catch (err) {
      if (err instanceof oidc.ResponseBodyError && err.error === 'invalid_grant') return 'refused';
      throw new ProviderUnreachable(describe(err));
    }
  }

  private async configurationOf(provider: IdentityProviderRow): Promise<oidc.Configuration> {
    const version = provider.updatedAt.getTime();
    const known = this.configurations.get(provider.id);
    if (known?.version === version) return known.configuration;
    const secret = open<string>(await this.secrets.get(SECRETS_KEY), provider.id, 'client-secret', provider.clientSecretSealed);
    if (secret === null) throw new ProviderUnreachable(`the client secret of ${provider.id} cannot be opened (was server_secrets replaced?)`);
    const auth = provider.tokenEndpointAuthMethod === 'client_secret_post' ? oidc.ClientSecretPost(secret) : oidc.ClientSecretBasic(secret);
    const configuration = new oidc.Configuration(provider.metadata as unknown as oidc.ServerMetadata, provider.clientId, { client_secret: secret }, auth);
    if (isLoopbackHost(new URL(provider.issuer).hostname)) oidc.allowInsecureRequests(configuration);
    configuration.timeout = PROVIDER_TIMEOUT_SECONDS;
    // The token, userinfo and JWKS endpoints are the provider document's: the same address rules.
    configuration[oidc.customFetch] = this.network.fetch;
    this.configurations.set(provider.id, { version, configuration });
    return configuration;
  }
}

/** The address refusal behind `err` (openid-client may wrap what its fetch threw), if it is one. */
function addressRefusalIn(err: unknown): ProviderAddressRefused | undefined {
  for (let e = err; e instanceof Error; e = e.cause) if (e instanceof ProviderAddressRefused) return e;
  return undefined;
}

/** What went wrong, in a few words, for the log and the audit (openid-client's own message and its cause's). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  return cause && cause !== err.message ? `${err.message}: ${cause}` : err.message;
}

function refusalOf(err: unknown): Error {
  if (err instanceof oidc.AuthorizationResponseError) return new ProviderAnswerRefused(`the provider answered ${err.error}${err.error_description ? ` (${err.error_description})` : ''}`, 'refused');
  if (err instanceof oidc.ResponseBodyError) {
    const kind = ['invalid_client', 'unauthorized_client'].includes(err.error) ? 'misconfigured' : err.error === 'access_denied' ? 'refused' : 'mismatch';
    return new ProviderAnswerRefused(`the token endpoint answered ${err.error}`, kind);
  }
  if (err instanceof oidc.WWWAuthenticateChallengeError) return new ProviderAnswerRefused(`the token endpoint refused the client (${describe(err)})`, 'misconfigured');
  // A provider that answers 5xx or HTML is away, not refusing.
  if (err instanceof oidc.ClientError && !['OAUTH_RESPONSE_IS_NOT_CONFORM', 'OAUTH_RESPONSE_IS_NOT_JSON'].includes(err.code ?? '')) return new ProviderAnswerRefused(describe(err));
  return new ProviderUnreachable(describe(err));
}
