import { Injectable } from '@nestjs/common';
import {
  type AuthorizationServerMetadata,
  CLI_CLIENT_ID,
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
import { ApiException } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { DeviceLoginService, type PollOutcome } from '../device-login/device-login.service.js';
import { InvalidGrantError, RefreshTokensService } from '../refresh-tokens/refresh-tokens.service.js';
import { TokensService } from '../tokens/tokens.service.js';
import type { OAuthClient } from './oauth-client.entity.js';
import { OAuthClientsService } from './oauth-clients.service.js';

/** An RFC 6749 §5.2 error: 400 with its code; the filter adds `error_description` and no-store. */
export const oauthError = (code: ErrorCode, description: string) => new ApiException(400, code, description);

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
 * (SCOPES) and allowed to the client; without a `scope`, all the client is allowed (RFC 6749 §3.3).
 * @throws invalid_scope naming what is unknown or not allowed.
 */
function grantableScope(requested: string | undefined, client: OAuthClient): string {
  if (requested === undefined || requested.trim() === '') return client.allowedScopes;
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
  ) {}

  /** RFC 8414: the issuer is PUBLIC_URL, and every endpoint hangs off it. */
  metadata(): AuthorizationServerMetadata {
    const base = this.config.publicUrl;
    return {
      issuer: base,
      device_authorization_endpoint: base + OAUTH_ROUTES.deviceAuthorization,
      token_endpoint: base + OAUTH_ROUTES.token,
      revocation_endpoint: base + OAUTH_ROUTES.revoke,
      introspection_endpoint: base + OAUTH_ROUTES.introspect,
      grant_types_supported: [DEVICE_CODE_GRANT_TYPE, 'refresh_token'],
      // No authorization endpoint: the device flow is the only way in.
      response_types_supported: [],
      token_endpoint_auth_methods_supported: ['none'],
      scopes_supported: Object.keys(SCOPES),
      revocation_endpoint_auth_methods_supported: ['none'],
      service_documentation: `${base}/api/docs`,
    };
  }

  private async requireClient(clientId: string): Promise<OAuthClient> {
    const client = await this.clients.find(clientId);
    if (!client) throw oauthError(ERROR_CODES.invalidClient, `Unknown client_id: ${clientId}.`);
    if (client.disabledAt) throw oauthError(ERROR_CODES.invalidClient, `The client ${clientId} is disabled on this server: ask its administrator.`);
    return client;
  }

  /** RFC 8628 §3.1–3.2, on the same device logins as POST /api/cli/auth/device/start. */
  async authorizeDevice(request: DeviceAuthorizationRequest, ip: string | null, userAgent: string | null, requestOrigin?: string): Promise<DeviceAuthorizationResponse> {
    if (!this.deviceLogins.enabled) throw oauthError(ERROR_CODES.unsupportedGrantType, 'Device login is turned off on this server.');
    const client = await this.requireClient(request.client_id);
    const scope = grantableScope(request.scope, client);
    // It says nothing of itself (no clientName): the approval page and the session's label
    // use the client's registered name.
    const started = await this.deviceLogins.start({}, ip, userAgent, { id: client.id, scope }, requestOrigin);
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

  /** RFC 6749 §6, with rotation: the same rules as POST /api/cli/auth/refresh. */
  async refreshTokenGrant(refreshToken: string, clientId: string, ip: string | null, scope?: string): Promise<TokenResponse> {
    await this.requireClient(clientId);
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
   * RFC 7009. A token of a device login takes its family with it (§2.1: revoking a refresh
   * token SHOULD also revoke the access tokens of the same grant). An unknown token is no
   * error (§2.2); a token of another client than the one named is refused.
   */
  async revoke(request: RevocationRequest, ip: string | null): Promise<void> {
    const refusesClient = (clientId: string | null) => request.client_id !== undefined && clientId !== null && clientId !== request.client_id;
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
    if (access.deviceLoginId) await this.tokens.revokeFamily(access.deviceLoginId, 'revoked by the client', ip);
    else await this.tokens.revokeForUser(access.userId, access.id, ip);
  }

  /** RFC 7662: what a resource server may know of a token; `{active: false}` and nothing else for a dead one. */
  async introspect(token: string): Promise<IntrospectionResponse> {
    const isRefresh = token.startsWith(REFRESH_TOKEN_PREFIX);
    const found = isRefresh ? await this.refreshTokens.describe(token) : await this.tokens.describe(token);
    if (!found?.active) return { active: false };
    return {
      active: true,
      sub: found.userId,
      username: found.email,
      // A token created directly (tokens page, POST /token) belongs to the CLI's client.
      client_id: found.clientId ?? CLI_CLIENT_ID,
      token_type: isRefresh ? 'refresh_token' : 'Bearer',
      iat: toEpoch(found.createdAt),
      exp: toEpoch(found.expiresAt),
      // Exactly what was granted: a token created directly has the CLI's scopes.
      ...(scopeOf(found) ? { scope: scopeOf(found) } : {}),
    };
  }
}
