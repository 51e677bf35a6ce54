import { Injectable } from '@nestjs/common';
import {
  type AuthorizationServerMetadata,
  type OpenIdConfiguration,
  type UserInfoResponse,
  CLI_CLIENT_ID,
  CLIENT_CREDENTIALS_GRANT_TYPE,
  TOKEN_EXCHANGE_GRANT_TYPE,
  CLI_SCOPES,
  DEVICE_CODE_GRANT_TYPE,
  type DeviceAuthorizationRequest,
  type DeviceAuthorizationResponse,
  ERROR_CODES,
  type ErrorCode,
  type IntrospectionResponse,
  OAUTH_ROUTES,
  parseScopes,
  REFRESH_TOKEN_PREFIX,
  type RevocationRequest,
  ROUTES,
  SCOPES,
  type TokenResponse,
} from '@prospect/contract';
import type { AuthPrincipal } from '../auth/auth-principal.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { DeviceLoginService, type PollOutcome } from '../device-login/device-login.service.js';
import { InvalidGrantError, RefreshTokensService } from '../refresh-tokens/refresh-tokens.service.js';
import { ID_TOKEN_SIGNING_ALG } from '../server-secrets/signing-keys.js';
import { TokensService } from '../tokens/tokens.service.js';
import { OrganizationsService } from '../organizations/organizations.service.js';
import { UsersService } from '../users/users.service.js';
import type { OAuthClient } from './oauth-client.entity.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { ASSERTION_SIGNING_ALGS, ServiceAccountsService } from '../service-accounts/service-accounts.service.js';
import { oauthError } from './oauth-errors.js';
import type { DatabaseDeadline } from '../database/database-deadline.js';

export { oauthError } from './oauth-errors.js';

/** What the ID token and userinfo may say, by scope (OpenID Connect Core §5.4). */
const CLAIMS_SUPPORTED = ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'amr', 'name', 'email', 'email_verified', 'orgs'];

/** The device flow's states as RFC 8628 §3.5 names them. */
const POLL_ERRORS: Record<Exclude<PollOutcome['kind'], 'authorized'>, [ErrorCode, string]> = {
  pending: [ERROR_CODES.authorizationPending, 'The person has not approved this sign-in yet.'],
  slow_down: [ERROR_CODES.slowDown, 'Polling too fast: add 5 seconds to the interval.'],
  denied: [ERROR_CODES.accessDenied, 'The person denied this sign-in.'],
  cancelled: [ERROR_CODES.accessDenied, 'This sign-in was cancelled.'],
  expired: [ERROR_CODES.expiredToken, 'The device code has expired; start again.'],
  replayed: [ERROR_CODES.invalidGrant, 'This device code was already used.'],
  unknown: [ERROR_CODES.invalidGrant, 'Unknown device code, or one issued to another client.'],
};

/** A token's granted scope as introspection reports it (a direct token has no sign-in, and the CLI's scopes). */
const scopeOf = (token: { scope: string | null }) => token.scope ?? CLI_SCOPES.join(' ');

const toEpoch = (d: Date) => Math.floor(d.getTime() / 1000);

/**
 * What a device authorization may be granted: the scopes asked for, each one defined here
 * (SCOPES) and allowed to the client; without a `scope`, all the client is allowed but `admin`,
 * which is only ever had when asked for (RFC 6749 §3.3 lets the default be ours; issue #31).
 * @throws invalid_scope naming what is unknown or not allowed.
 */
function grantableScope(requested: string | undefined, client: OAuthClient): string {
  if (requested === undefined || requested.trim() === '') {
    return client.allowedScopes
      .split(' ')
      .filter((scope) => scope && scope !== 'admin')
      .join(' ');
  }
  const asked = requested.split(' ').filter(Boolean);
  const unknown = asked.filter((scope) => !Object.hasOwn(SCOPES, scope));
  if (unknown.length) throw oauthError(ERROR_CODES.invalidScope, `Unknown scope: ${unknown.join(' ')} (scopes_supported lists them).`);
  const allowed = new Set(client.allowedScopes.split(' '));
  const refused = asked.filter((scope) => !allowed.has(scope));
  if (refused.length) throw oauthError(ERROR_CODES.invalidScope, `Not allowed to ${client.id}: ${refused.join(' ')}.`);
  return parseScopes(requested)!.join(' ');
}

/**
 * The OAuth 2.0 authorization server over the same tables and rules as the contract's routes:
 * a device login is a device login whichever surface started it, and a refresh is a refresh.
 */
@Injectable()
export class OAuthService {
  constructor(
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly clients: OAuthClientsService,
    private readonly deviceLogins: DeviceLoginService,
    private readonly tokens: TokensService,
    private readonly refreshTokens: RefreshTokensService,
    private readonly users: UsersService,
    private readonly organizations: OrganizationsService,
    private readonly serviceAccounts: ServiceAccountsService,
  ) {}

  /** RFC 8414: the issuer is PUBLIC_URL, and every endpoint hangs off it. */
  metadata(): AuthorizationServerMetadata {
    const base = this.config.publicUrl;
    const clientAuthentication = ['none', 'client_secret_basic', 'client_secret_post'];
    // private_key_jwt authenticates service accounts at the token endpoint (issue #45); revocation takes the others.
    const tokenEndpointAuthentication = [...clientAuthentication, 'private_key_jwt'];
    return {
      issuer: base,
      authorization_endpoint: base + OAUTH_ROUTES.authorize,
      device_authorization_endpoint: base + OAUTH_ROUTES.deviceAuthorization,
      token_endpoint: base + OAUTH_ROUTES.token,
      revocation_endpoint: base + OAUTH_ROUTES.revoke,
      introspection_endpoint: base + OAUTH_ROUTES.introspect,
      userinfo_endpoint: base + OAUTH_ROUTES.userinfo,
      jwks_uri: base + OAUTH_ROUTES.jwks,
      grant_types_supported: ['authorization_code', DEVICE_CODE_GRANT_TYPE, 'refresh_token', CLIENT_CREDENTIALS_GRANT_TYPE, TOKEN_EXCHANGE_GRANT_TYPE],
      // OAuth 2.1: the code flow only, with PKCE S256 for every client.
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: tokenEndpointAuthentication,
      token_endpoint_auth_signing_alg_values_supported: [...ASSERTION_SIGNING_ALGS],
      scopes_supported: Object.keys(SCOPES),
      revocation_endpoint_auth_methods_supported: clientAuthentication,
      authorization_response_iss_parameter_supported: true,
      service_documentation: `${base}/api/docs`,
    };
  }

  /** OpenID Connect Discovery 1.0: the same document, and what OpenID Connect adds. */
  openidConfiguration(): OpenIdConfiguration {
    return {
      ...this.metadata(),
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: [ID_TOKEN_SIGNING_ALG],
      claims_supported: CLAIMS_SUPPORTED,
      prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
      claims_parameter_supported: false,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
      // Back-Channel Logout 1.0 (issue #46): a grant carries no session id, so logout tokens name the person (`sub`) only.
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: false,
    };
  }

  private async requireClient(clientId: string): Promise<OAuthClient> {
    const client = await this.clients.find(clientId);
    if (!client) throw oauthError(ERROR_CODES.invalidClient, `Unknown client_id: ${clientId}.`);
    if (client.disabledAt) throw oauthError(ERROR_CODES.invalidClient, `The client ${clientId} is disabled on this server: ask its administrator.`);
    return client;
  }

  /**
   * RFC 8628 §3.1–3.2, on the same device logins as POST /api/cli/auth/device/start. For public
   * clients: a poll stays one statement (it names its client, no secret to check), so a
   * confidential client signs people in with the code flow.
   */
  async authorizeDevice(request: DeviceAuthorizationRequest, ip: string | null, userAgent: string | null, requestOrigin: string | undefined, deadline: DatabaseDeadline): Promise<DeviceAuthorizationResponse> {
    if (!this.deviceLogins.enabled) throw oauthError(ERROR_CODES.unsupportedGrantType, 'Device login is turned off on this server.');
    const client = await deadline.within(() => this.requireClient(request.client_id));
    if (client.type !== 'public') throw oauthError(ERROR_CODES.unauthorizedClient, `${client.id} is a confidential client: the device flow is for public clients; use the authorization code flow.`);
    const scope = grantableScope(request.scope, client);
    // It says nothing of itself (no clientName): the approval page and the session's label
    // use the client's registered name.
    const started = await this.deviceLogins.start({}, ip, userAgent, { id: client.id, scope }, requestOrigin, deadline);
    return {
      device_code: started.deviceCode,
      user_code: started.userCode,
      verification_uri: this.deviceLogins.publicBase(requestOrigin) + ROUTES.device,
      verification_uri_complete: started.verificationUrl,
      expires_in: started.expiresInSeconds,
      interval: started.intervalSeconds,
    };
  }

  /** RFC 8628 §3.4–3.5: one poll of a device code, answered as the RFC words it. */
  async deviceCodeGrant(deviceCode: string, clientId: string, ip: string | null): Promise<TokenResponse> {
    // The poll matches the client itself; the client is looked up only to name a miss right,
    // so a poll (every few seconds per waiting device) stays one statement.
    const outcome = await this.deviceLogins.pollGrant(deviceCode, clientId, ip);
    if (outcome.kind === 'unknown') await this.requireClient(clientId);
    if (outcome.kind !== 'authorized') throw oauthError(...POLL_ERRORS[outcome.kind]);
    const { reply, scope } = outcome;
    return this.tokenResponse(reply.accessToken, new Date(reply.expiresAt), reply.refreshToken, scope);
  }

  /**
   * RFC 6749 §6, with rotation: the same rules as POST /api/cli/auth/refresh, for a device grant's
   * family and a code grant's alike.
   * @param client the client, authenticated (ClientAuthentication).
   */
  async refreshTokenGrant(refreshToken: string, client: OAuthClient, ip: string | null, scope?: string): Promise<TokenResponse> {
    const clientId = client.id;
    // RFC 6749 §6: a refresh may ask for the scope granted or less, never more. Tokens here
    // are not narrowed, so asking for less changes nothing either.
    if (scope !== undefined) {
      const granted = new Set((await this.refreshTokens.describe(refreshToken))?.scope?.split(' ') ?? []);
      const beyond = scope.split(' ').filter((s) => !granted.has(s));
      if (beyond.length) throw oauthError(ERROR_CODES.invalidScope, `Not granted to this session: ${beyond.join(' ')}.`);
    }
    try {
      const { pair, scope } = await this.refreshTokens.refresh(refreshToken, clientId, ip);
      return this.tokenResponse(pair.accessToken, pair.expiresAt, pair.refreshToken, scope);
    } catch (err) {
      if (err instanceof InvalidGrantError) throw oauthError(ERROR_CODES.invalidGrant, err.message);
      throw err;
    }
  }

  private tokenResponse(accessToken: string, expiresAt: Date, refreshToken: string, scope: string | null): TokenResponse {
    const expiresIn = Math.max(0, Math.round((expiresAt.getTime() - this.clock.now().getTime()) / 1000));
    return { access_token: accessToken, token_type: 'Bearer', expires_in: expiresIn, refresh_token: refreshToken, ...(scope ? { scope } : {}) };
  }

  /**
   * RFC 7009. A token of a device login or code grant takes its family with it (§2.1: revoking a
   * refresh token SHOULD also revoke the access tokens of the same grant). An unknown token is no
   * error (§2.2); a token of another client than the one named (or authenticated) is refused.
   */
  async revoke(request: RevocationRequest, ip: string | null, client?: OAuthClient): Promise<void> {
    const named = client?.id ?? request.client_id;
    const refusesClient = (clientId: string | null) => named !== undefined && clientId !== null && clientId !== named;
    const otherClient = () => oauthError(ERROR_CODES.unauthorizedClient, 'This token was issued to another client.');
    if (request.token.startsWith(REFRESH_TOKEN_PREFIX)) {
      const refresh = await this.refreshTokens.describe(request.token);
      if (!refresh) return;
      if (refusesClient(refresh.clientId)) throw otherClient();
      await this.tokens.revokeFamily(refresh.familyId, 'revoked by the client', ip);
      return;
    }
    const access = await this.tokens.describe(request.token);
    if (!access) return;
    if (refusesClient(access.clientId)) throw otherClient();
    if (access.grantId) await this.tokens.revokeFamily(access.grantId, 'revoked by the client', ip);
    else await this.tokens.revokeForUser(access.userId, access.id, ip);
  }

  /** OpenID Connect Core §5.3: who the token's person is, as far as its scopes allow (`sub` is the id /me answers). */
  async userinfo(principal: AuthPrincipal): Promise<UserInfoResponse> {
    const user = await this.users.findById(principal.user.id);
    if (!user) throw oauthError(ERROR_CODES.invalidToken, 'This token’s account no longer exists.', 401);
    return {
      sub: user.id,
      ...(principal.scopes.includes('profile') ? { name: user.name } : {}),
      ...(principal.scopes.includes('email') ? { email: user.email, email_verified: user.emailVerifiedAt !== null } : {}),
      ...(principal.scopes.includes('orgs') ? { orgs: await this.organizations.listFor(user.id, principal.issuedAt ?? null) } : {}),
    };
  }

  /** The client a bearer token was issued to (its grant's; the CLI's for a token made directly), for its origin check. */
  async clientOfToken(rawToken: string): Promise<OAuthClient | null> {
    const described = await this.tokens.describe(rawToken);
    return this.clients.find(described?.clientId ?? CLI_CLIENT_ID);
  }

  /** RFC 7662: what a resource server may know of a token; `{active: false}` and nothing else for a dead one. */
  async introspect(token: string): Promise<IntrospectionResponse> {
    const isRefresh = token.startsWith(REFRESH_TOKEN_PREFIX);
    const found = isRefresh ? await this.refreshTokens.describe(token) : await this.tokens.describe(token);
    if (!found?.active) return { active: false };
    // A service account's token (issue #45) has no username; its client is the account itself.
    const serviceAccount = found.email === null ? await this.serviceAccounts.describe(found.userId) : undefined;
    return {
      active: true,
      sub: found.userId,
      ...(found.email !== null ? { username: found.email } : {}),
      // A token created directly (tokens page, POST /token) belongs to the CLI's client.
      client_id: serviceAccount?.clientId ?? found.clientId ?? CLI_CLIENT_ID,
      token_type: isRefresh ? 'refresh_token' : 'Bearer',
      iat: toEpoch(found.createdAt),
      exp: toEpoch(found.expiresAt),
      // Exactly what was granted: a token created directly has the CLI's scopes.
      ...(scopeOf(found) ? { scope: scopeOf(found) } : {}),
    };
  }
}
