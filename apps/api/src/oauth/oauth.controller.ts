import { RequestOrigin } from '../common/request-origin.js';
import { Body, Controller, Get, Header, Headers, HttpCode, Ip, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
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
  RefreshTokenRequestSchema,
  RevocationRequestSchema,
  type TokenResponse,
  TokenResponseSchema,
} from '@prospect/contract';
import { forbidden } from '../common/api-exception.js';
import { ApiErrors, ApiFormBody, ApiJsonResponse } from '../common/openapi.js';
import { Public } from '../auth/public.decorator.js';
import { ZodBodyPipe } from '../common/zod-body.pipe.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { type AuthPrincipal, Principal } from '../auth/auth-principal.js';
import { OAuthService, oauthError } from './oauth.service.js';
import { RequireScope } from '../auth/require-scope.decorator.js';

const deviceCodeGrant = new ZodBodyPipe(DeviceCodeTokenRequestSchema);
const refreshTokenGrant = new ZodBodyPipe(RefreshTokenRequestSchema);

/** The OAuth 2.0 surface: thin translations of form bodies to OAuthService calls. */
@ApiTags('oauth')
@Controller()
export class OAuthController {
  constructor(
    private readonly oauth: OAuthService,
    private readonly limits: RateLimits,
  ) {}

  @Get(OAUTH_ROUTES.metadata)
  @Public()
  @ApiOperation({ summary: 'RFC 8414 authorization server metadata: where every OAuth endpoint is.' })
  @ApiJsonResponse(200, 'The metadata.', AuthorizationServerMetadataSchema)
  metadata(): AuthorizationServerMetadata {
    return this.oauth.metadata();
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
    @Body(new ZodBodyPipe(DeviceAuthorizationRequestSchema)) body: { client_id: string; scope?: string },
    @Ip() ip: string,
    @RequestOrigin() origin: string | undefined,
    @Headers('user-agent') userAgent?: string,
  ): Promise<DeviceAuthorizationResponse> {
    await this.limits.deviceStart(ip);
    return this.oauth.authorizeDevice(body, ip, userAgent ?? null, origin);
  }

  @Post(OAUTH_ROUTES.token)
  @Public()
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  @ApiOperation({
    summary: 'RFC 6749 token endpoint: grant_type urn:ietf:params:oauth:grant-type:device_code (RFC 8628) or refresh_token (rotated).',
    description:
      'Errors are RFC 6749 §5.2 bodies (400, `error` and `error_description`): authorization_pending, slow_down, access_denied, expired_token, invalid_grant, invalid_client, unsupported_grant_type, invalid_request.',
  })
  @ApiFormBody(DeviceCodeTokenRequestSchema)
  @ApiJsonResponse(200, 'An access token, and the refresh token that renews it (used once).', TokenResponseSchema)
  @ApiErrors([400, 'An RFC 6749 §5.2 error.'])
  token(@Body() body: unknown, @Ip() ip: string): Promise<TokenResponse> {
    const grantType = (body as Record<string, unknown> | undefined)?.grant_type;
    if (grantType === DEVICE_CODE_GRANT_TYPE) {
      const request = deviceCodeGrant.transform(body);
      return this.oauth.deviceCodeGrant(request.device_code, request.client_id, ip);
    }
    if (grantType === 'refresh_token') {
      const request = refreshTokenGrant.transform(body);
      return this.oauth.refreshTokenGrant(request.refresh_token, request.client_id, ip, request.scope);
    }
    if (typeof grantType !== 'string' || !grantType) throw oauthError(ERROR_CODES.invalidRequest, 'Missing field: grant_type.');
    throw oauthError(ERROR_CODES.unsupportedGrantType, `Unsupported grant_type: use ${DEVICE_CODE_GRANT_TYPE} or refresh_token.`);
  }

  @Post(OAUTH_ROUTES.revoke)
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'RFC 7009 revocation of an access or refresh token; a device-login token revokes its whole family. 200 for an unknown token.' })
  @ApiFormBody(RevocationRequestSchema)
  @ApiJsonResponse(200, 'Revoked, or nothing to revoke.')
  @ApiErrors([400, 'invalid_request, or unauthorized_client (a token of another client).'])
  async revoke(@Body(new ZodBodyPipe(RevocationRequestSchema)) body: { token: string; client_id?: string }, @Ip() ip: string): Promise<void> {
    await this.oauth.revoke(body, ip);
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
  introspect(@Principal() caller: AuthPrincipal, @Body(new ZodBodyPipe(IntrospectionRequestSchema)) body: { token: string }): Promise<IntrospectionResponse> {
    if (caller.user.role !== 'admin') throw forbidden('Only an admin token may introspect tokens.');
    return this.oauth.introspect(body.token);
  }
}
