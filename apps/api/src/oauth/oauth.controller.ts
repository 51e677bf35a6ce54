import { RequestOrigin } from '../common/request-origin.js';
import { Body, Controller, Get, Header, Headers, HttpCode, Ip, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import {
  AuthorizationCodeTokenRequestSchema,
  CLIENT_CREDENTIALS_GRANT_TYPE,
  type ClientCredentialsTokenResponse,
  ClientCredentialsTokenRequestSchema,
  JWT_BEARER_CLIENT_ASSERTION_TYPE,
  AuthorizationServerMetadataSchema,
  type AuthorizationServerMetadata,
  DEVICE_CODE_GRANT_TYPE,
  DeviceAuthorizationRequestSchema,
  type DeviceAuthorizationResponse,
  DeviceAuthorizationResponseSchema,
  DeviceCodeTokenRequestSchema,
  ERROR_CODES,
  IntrospectionRequestSchema,
  type IntrospectionResponse,
  IntrospectionResponseSchema,
  OAUTH_ROUTES,
  type OpenIdConfiguration,
  OpenIdConfigurationSchema,
  RefreshTokenRequestSchema,
  type RevocationRequest,
  RevocationRequestSchema,
  SERVICE_NAME,
  TOKEN_EXCHANGE_GRANT_TYPE,
  type TokenExchangeResponse,
  TokenExchangeTokenRequestSchema,
  type TokenResponse,
  TokenResponseSchema,
  type UserInfoResponse,
  UserInfoResponseSchema,
} from '@prospect/contract';
import * as z from 'zod/mini';
import { forbidden } from '../common/api-exception.js';
import { ApiErrors, ApiFormBody, ApiJsonResponse } from '../common/openapi.js';
import { Public } from '../auth/public.decorator.js';
import { ValidBody, validBody } from '../common/valid-body.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { type AuthPrincipal, Principal } from '../auth/auth-principal.js';
import { OAuthService, oauthError } from './oauth.service.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { AuthorizationService } from './authorization.service.js';
import { basicCredentials, ClientAuthentication } from './client-authentication.js';
import { ClientCredentialsGrant, type PresentedClientCredentials } from '../service-accounts/client-credentials.js';
import { TokenExchangeGrant } from '../service-accounts/token-exchange.js';
import { OAuthCors } from './oauth-cors.js';
import { SigningKeys } from '../server-secrets/signing-keys.js';
import { AppConfig } from '../config/app-config.js';
import { DatabaseDeadline } from '../database/database-deadline.js';

/** The OAuth 2.0 and OpenID Connect surface: thin translations of form bodies to the services' calls. */
@ApiTags('oauth')
@Controller()
export class OAuthController {
  constructor(
    private readonly oauth: OAuthService,
    private readonly authorization: AuthorizationService,
    private readonly clientAuthentication: ClientAuthentication,
    private readonly cors: OAuthCors,
    private readonly signingKeys: SigningKeys,
    private readonly limits: RateLimits,
    private readonly config: AppConfig,
    private readonly clientCredentials: ClientCredentialsGrant,
    private readonly tokenExchange: TokenExchangeGrant,
  ) {}

  @Get(OAUTH_ROUTES.metadata)
  @Public()
  @ApiOperation({ summary: 'RFC 8414 authorization server metadata: where every OAuth endpoint is.' })
  @ApiJsonResponse(200, 'The metadata.', AuthorizationServerMetadataSchema)
  metadata(): AuthorizationServerMetadata {
    return this.oauth.metadata();
  }

  @Get(OAUTH_ROUTES.openidConfiguration)
  @Public()
  @ApiOperation({ summary: 'OpenID Connect Discovery 1.0: the metadata with what OpenID Connect adds (ID token algorithm, claims, userinfo, JWKS).' })
  @ApiJsonResponse(200, 'The OpenID provider configuration.', OpenIdConfigurationSchema)
  openidConfiguration(): OpenIdConfiguration {
    return this.oauth.openidConfiguration();
  }

  @Get(OAUTH_ROUTES.jwks)
  @Public()
  // Replicas read the keys from the database on every request; a verifier may keep them a few minutes.
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({
    summary: 'The public keys ID tokens are signed with (RFC 7517), by kid.',
    description: 'The signing key, and every key retired by a rotation until the ID tokens it signed have expired.',
  })
  @ApiJsonResponse(200, 'The JWKS.', z.object({ keys: z.array(z.record(z.string(), z.unknown())) }))
  jwks() {
    return this.signingKeys.publishedKeys();
  }

  @Get(OAUTH_ROUTES.userinfo)
  @RequireScope('openid')
  @ApiBearerAuth()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'OpenID Connect userinfo: `sub` (the id /api/cli/auth/me answers), `name` with `profile`, `email` and `email_verified` with `email`.' })
  @ApiJsonResponse(200, 'Who the token’s person is.', UserInfoResponseSchema)
  @ApiErrors([401, 'No valid bearer token.'], [403, 'insufficient_scope: the token lacks `openid`.'])
  userinfo(@Principal() caller: AuthPrincipal, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<UserInfoResponse> {
    return this.userinfoFor(caller, req, res);
  }

  @Post(OAUTH_ROUTES.userinfo)
  @HttpCode(200)
  @RequireScope('openid')
  @ApiBearerAuth()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'OpenID Connect userinfo, by POST (the same answer as GET).' })
  @ApiJsonResponse(200, 'Who the token’s person is.', UserInfoResponseSchema)
  @ApiErrors([401, 'No valid bearer token.'], [403, 'insufficient_scope: the token lacks `openid`.'])
  userinfoByPost(@Principal() caller: AuthPrincipal, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<UserInfoResponse> {
    return this.userinfoFor(caller, req, res);
  }

  private async userinfoFor(caller: AuthPrincipal, req: Request, res: Response): Promise<UserInfoResponse> {
    // A browser's call must come from an origin of the token's own client.
    if (req.get('origin')) {
      const token = /^Bearer +(\S+)$/i.exec(req.get('authorization') ?? '')?.[1] ?? '';
      const client = await this.oauth.clientOfToken(token);
      this.cors.requireAllowedOrigin(req, res, client ?? { id: 'this token’s client', allowedOrigins: [] });
    }
    return this.oauth.userinfo(caller);
  }

  @Post(OAUTH_ROUTES.deviceAuthorization)
  @Public()
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'RFC 8628 device authorization: a device code and the code a person approves at verification_uri.' })
  @ApiFormBody(DeviceAuthorizationRequestSchema)
  @ApiJsonResponse(200, 'Started.', DeviceAuthorizationResponseSchema)
  @ApiErrors([400, 'invalid_request, invalid_client (unknown client_id).'], [429, 'Too many starts from this address (see Retry-After).'])
  async deviceAuthorization(
    @ValidBody(DeviceAuthorizationRequestSchema) body: { client_id: string; scope?: string },
    @Ip() ip: string,
    @RequestOrigin() origin: string | undefined,
    @Headers('user-agent') userAgent?: string,
  ): Promise<DeviceAuthorizationResponse> {
    // One budget for the whole request (issue #32), as the CLI's device start.
    const deadline = DatabaseDeadline.after(this.config.databaseTimeoutMs);
    await this.limits.deviceStart(ip, deadline);
    return this.oauth.authorizeDevice(body, ip, userAgent ?? null, origin, deadline);
  }

  @Post(OAUTH_ROUTES.token)
  @Public()
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  @ApiOperation({
    summary:
      'RFC 6749 token endpoint: grant_type authorization_code (with the PKCE code_verifier), urn:ietf:params:oauth:grant-type:device_code (RFC 8628), refresh_token (rotated), client_credentials (RFC 6749 §4.4, for service accounts: client_secret_basic, client_secret_post or private_key_jwt per RFC 7523; an access token of at most an hour, no refresh token), or urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693, for service accounts: a trusted issuer’s JWT as subject_token with the account’s client_id and no secret; the same short-lived token, with issued_token_type).',
    description:
      'A public client names itself with `client_id`; a confidential one authenticates with client_secret_basic or client_secret_post. Errors are RFC 6749 §5.2 bodies (400, or 401 for a failed Basic authentication; `error` and `error_description`): authorization_pending, slow_down, access_denied, expired_token, invalid_grant, invalid_client, unsupported_grant_type, invalid_request, invalid_scope.',
  })
  @ApiFormBody(AuthorizationCodeTokenRequestSchema)
  @ApiJsonResponse(200, 'An access token, the refresh token that renews it (used once), and an ID token for a grant of `openid`.', TokenResponseSchema)
  @ApiErrors([400, 'An RFC 6749 §5.2 error.'], [401, 'invalid_client: Basic authentication failed.'])
  async token(
    @Body() body: unknown,
    @Ip() ip: string,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<TokenResponse | ClientCredentialsTokenResponse | TokenExchangeResponse> {
    const grantType = (body as Record<string, unknown> | undefined)?.grant_type;
    if (grantType === DEVICE_CODE_GRANT_TYPE) {
      // The poll stays one statement: device logins are started by public clients only, which name themselves.
      const request = validBody(DeviceCodeTokenRequestSchema, body);
      if (req.get('origin')) this.cors.requireAllowedOrigin(req, res, await this.clientAuthentication.authenticate(req.get('authorization'), request));
      return this.oauth.deviceCodeGrant(request.device_code, request.client_id, ip);
    }
    if (grantType === 'refresh_token') {
      const request = validBody(RefreshTokenRequestSchema, body);
      const client = await this.clientAuthentication.authenticate(req.get('authorization'), request);
      this.cors.requireAllowedOrigin(req, res, client);
      return this.oauth.refreshTokenGrant(request.refresh_token, client, ip, request.scope);
    }
    if (grantType === 'authorization_code') {
      const request = validBody(AuthorizationCodeTokenRequestSchema, body);
      const client = await this.clientAuthentication.authenticate(req.get('authorization'), request);
      this.cors.requireAllowedOrigin(req, res, client);
      return this.authorization.exchange(client, { code: request.code, redirectUri: request.redirect_uri, codeVerifier: request.code_verifier }, ip);
    }
    if (grantType === CLIENT_CREDENTIALS_GRANT_TYPE) {
      // Service accounts only (issue #45): a machine's credentials are never a browser's.
      if (req.get('origin')) throw oauthError(ERROR_CODES.unauthorizedClient, 'The client credentials grant is not for browsers.');
      const request = validBody(ClientCredentialsTokenRequestSchema, body);
      return this.clientCredentials.grant(presentedClientCredentials(req.get('authorization'), request), request.scope, ip);
    }
    if (grantType === TOKEN_EXCHANGE_GRANT_TYPE) {
      // Workload identity federation (issue #45): a CI's token for a service account's; never a browser's.
      if (req.get('origin')) throw oauthError(ERROR_CODES.unauthorizedClient, 'The token exchange grant is not for browsers.');
      if (req.get('authorization')) throw oauthError(ERROR_CODES.invalidRequest, 'A token exchange takes no client authentication: the subject_token is the credential.');
      return this.tokenExchange.exchange(validBody(TokenExchangeTokenRequestSchema, body), ip);
    }
    if (typeof grantType !== 'string' || !grantType) throw oauthError(ERROR_CODES.invalidRequest, 'Missing field: grant_type.');
    throw oauthError(
      ERROR_CODES.unsupportedGrantType,
      `Unsupported grant_type: use authorization_code, ${DEVICE_CODE_GRANT_TYPE}, refresh_token, ${CLIENT_CREDENTIALS_GRANT_TYPE} or ${TOKEN_EXCHANGE_GRANT_TYPE}.`,
    );
  }

  @Post(OAUTH_ROUTES.revoke)
  @Public()
  @HttpCode(200)
  @ApiOperation({
    summary: 'RFC 7009 revocation of an access or refresh token; a token of a device login or code grant revokes its whole family. 200 for an unknown token.',
    description: 'A confidential client authenticates as at the token endpoint; a public one may name itself with `client_id`, and must from a browser (CORS).',
  })
  @ApiFormBody(RevocationRequestSchema)
  @ApiJsonResponse(200, 'Revoked, or nothing to revoke.')
  @ApiErrors([400, 'invalid_request, invalid_client, or unauthorized_client (a token of another client).'], [401, 'invalid_client: Basic authentication failed.'])
  async revoke(@ValidBody(RevocationRequestSchema) body: RevocationRequest, @Ip() ip: string, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<void> {
    // A client that says who it is is held to it (a confidential one proves it); one that says nothing may still revoke a token it holds.
    const named = req.get('authorization')?.match(/^Basic\b/i) || body.client_id !== undefined || body.client_secret !== undefined || req.get('origin');
    const client = named ? await this.clientAuthentication.authenticate(req.get('authorization'), body) : undefined;
    if (client) this.cors.requireAllowedOrigin(req, res, client);
    await this.oauth.revoke(body, ip, client);
  }

  @Post(OAUTH_ROUTES.introspect)
  @RequireScope('admin')
  @ApiBearerAuth()
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'RFC 7662 introspection, for resource servers.',
    description: "Authenticated with `Authorization: Bearer` and a token of an admin (create one on /settings/tokens with an admin's account).",
  })
  @ApiFormBody(IntrospectionRequestSchema)
  @ApiJsonResponse(200, 'What is known of the token; `{"active": false}` alone for an unknown, expired or revoked one.', IntrospectionResponseSchema)
  @ApiErrors([400, 'invalid_request.'], [401, 'No valid bearer token.'], [403, 'The bearer is not an admin, or insufficient_scope: the token lacks `admin`.'])
  introspect(@Principal() caller: AuthPrincipal, @ValidBody(IntrospectionRequestSchema) body: { token: string }): Promise<IntrospectionResponse> {
    if (caller.user.role !== 'admin') throw forbidden('Only an admin token may introspect tokens.');
    return this.oauth.introspect(body.token);
  }
}

/**
 * How a client credentials request authenticated, exactly one way (RFC 6749 §2.3, RFC 7523 §2.2):
 * Basic, a secret in the form, or a signed assertion.
 * @throws invalid_request for none or several, invalid_client for a malformed Basic header.
 */
function presentedClientCredentials(
  authorization: string | undefined,
  request: { client_id?: string; client_secret?: string; client_assertion_type?: string; client_assertion?: string },
): PresentedClientCredentials {
  const basic = basicCredentials(authorization);
  const assertion = request.client_assertion !== undefined || request.client_assertion_type !== undefined;
  const ways = [basic, request.client_secret !== undefined, assertion].filter(Boolean).length;
  if (ways > 1) throw oauthError(ERROR_CODES.invalidRequest, 'Authenticate one way: client_secret_basic, client_secret_post or private_key_jwt.');
  if (basic) {
    if (request.client_id !== undefined && request.client_id !== basic.id) throw oauthError(ERROR_CODES.invalidRequest, 'client_id differs from the one in the Authorization header.');
    return { method: 'client_secret_basic', clientId: basic.id, secret: basic.secret };
  }
  if (assertion) {
    if (request.client_assertion_type !== JWT_BEARER_CLIENT_ASSERTION_TYPE) throw oauthError(ERROR_CODES.invalidRequest, `client_assertion_type must be ${JWT_BEARER_CLIENT_ASSERTION_TYPE}.`);
    if (!request.client_assertion) throw oauthError(ERROR_CODES.invalidRequest, 'Missing field: client_assertion.');
    return { method: 'private_key_jwt', clientId: request.client_id, assertion: request.client_assertion };
  }
  if (!request.client_id) throw oauthError(ERROR_CODES.invalidRequest, 'Missing field: client_id.');
  if (request.client_secret === undefined) throw oauthError(ERROR_CODES.invalidClient, 'A service account authenticates: client_secret_basic, client_secret_post or private_key_jwt.', 401, { 'WWW-Authenticate': `Basic realm="${SERVICE_NAME}"` });
  return { method: 'client_secret_post', clientId: request.client_id, secret: request.client_secret };
}
