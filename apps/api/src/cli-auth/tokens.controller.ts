import { Controller, Get, Header, Headers, HttpCode, Ip, Post, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import {
  type AuthorizedResponse,
  AuthorizedResponseSchema,
  CLI_CLIENT_ID,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_MAX_LENGTH,
  type RefreshRequest,
  RefreshRequestSchema,
  type IssueTokenRequest,
  IssueTokenRequestSchema,
  IssuedTokenResponseSchema,
  type IssuedTokenResponse,
  type MeResponse,
  MeResponseSchema,
  ERROR_CODES,
  SERVICE_NAME,
} from '@prospect/contract';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { Public } from '../auth/public.decorator.js';
import { ValidBody } from '../common/valid-body.js';
import { toPublicUser } from '../users/user.entity.js';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { type AuthPrincipal, Principal } from '../auth/auth-principal.js';
import { InvalidGrantError, RefreshTokensService } from '../refresh-tokens/refresh-tokens.service.js';
import { TokenIssuanceService } from './token-issuance.service.js';
import { IDEMPOTENCY_WINDOW_HOURS, TokensService } from '../tokens/tokens.service.js';
import { refreshRefused } from './cli-auth-answers.js';
import { parseIdempotencyKey, presentedCredential } from './idempotency-key.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { OrganizationsService } from '../organizations/organizations.service.js';
import { ServiceAccountsService } from '../service-accounts/service-accounts.service.js';
import { AllowServiceAccount } from '../auth/allow-service-account.decorator.js';
import { ApiException } from '../common/api-exception.js';

@ApiTags('cli auth')
@ApiBearerAuth()
@Controller('api/cli/auth')
export class TokensController {
  constructor(
    private readonly tokens: TokensService,
    private readonly issuance: TokenIssuanceService,
    private readonly refreshTokens: RefreshTokensService,
    private readonly organizations: OrganizationsService,
    private readonly serviceAccounts: ServiceAccountsService,
  ) {}

  @Get('me')
  @AllowServiceAccount()
  @RequireScope('profile')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Verify the bearer token and return its user and expiry.',
    description: 'For a token made with another token or a session (`POST /token` with a bearer token), `madeWith` says which.',
  })
  @ApiJsonResponse(200, 'The token is valid.', MeResponseSchema)
  @ApiErrors([401, 'Missing, unknown, expired or revoked token (see WWW-Authenticate).'], [403, 'insufficient_scope: the token lacks `profile`.'])
  async me(@Principal() principal: AuthPrincipal): Promise<MeResponse> {
    if (principal.kind === 'service_account') {
      // A machine of one organization (issue #45): no address, and its organization beside `user`.
      const account = await this.serviceAccounts.describe(principal.user.id);
      if (!account) throw new ApiException(401, ERROR_CODES.invalidToken, 'This service account no longer exists.', { 'WWW-Authenticate': `Bearer realm="${SERVICE_NAME}", error="invalid_token"` });
      return {
        user: { id: principal.user.id, email: null, name: account.name },
        kind: 'service_account',
        organization: account.organization,
        expiresAt: principal.expiresAt.toISOString(),
      };
    }
    // Only a token made with a bearer token pays for the one read that names its maker.
    const madeWith = principal.mintedBy ? await this.tokens.describeMinter(principal.mintedBy) : null;
    // Only a token that may read organizations (`orgs`) pays for the read that lists them, made now:
    // a member removed a moment ago no longer sees the organization.
    const organizations = principal.scopes.includes('orgs') ? await this.organizations.listFor(principal.user.id, principal.issuedAt ?? null) : null;
    return {
      user: toPublicUser(principal.user),
      expiresAt: principal.expiresAt.toISOString(),
      ...(madeWith ? { madeWith } : {}),
      ...(organizations ? { organizations } : {}),
    };
  }

  @Post('token')
  @AllowWebSession()
  @RequireScope('tokens')
  @HttpCode(201)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Issue a CLI token (for `prospect auth:login --token`).',
    description:
      'For yourself, or, as an admin with a fresh `admin` grant, for any user by `userEmail`. Made with a bearer token, the new token has at most its scopes (never `admin` for someone else) and lives at most as long as it can (a device session: until its refresh family ends; with `admin`: until the grant’s `admin` ends), and is revoked with it. Made in a signed-in browser (with its CSRF token, in sudo mode), it has the person’s scopes, `admin` only for an administrator.',
  })
  @ApiJsonBody(IssueTokenRequestSchema, false)
  @ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description: `A key of the client's choosing (draft-ietf-httpapi-idempotency-key-header: an sf-string such as "8e03978e-40d5-43e8-bc93-6894a57f9324", at most ${IDEMPOTENCY_KEY_MAX_LENGTH} characters). Sent again with the same credential and body within ${IDEMPOTENCY_WINDOW_HOURS} hours, it gets the same token, and no second one is made.`,
  })
  @ApiJsonResponse(201, 'The token; its secret is shown only in this response (and again for the same Idempotency-Key).', IssuedTokenResponseSchema)
  @ApiErrors(
    [400, 'Invalid body, or a malformed Idempotency-Key.'],
    [401, 'No valid credentials.'],
    [403, 'Not allowed to issue for that user; insufficient_scope: the token lacks `tokens` (or `admin`, for someone else); or a browser session not in sudo mode, not verified, or without the second factor this server requires.'],
    [404, 'No such user.'],
    [409, 'A request with the same Idempotency-Key is in progress (see Retry-After).'],
    [422, 'The Idempotency-Key was used with a different body.'],
  )
  issue(
    @Principal() principal: AuthPrincipal,
    @ValidBody(IssueTokenRequestSchema) body: IssueTokenRequest,
    @Ip() ip: string,
    @Req() req: Request,
    @Headers('idempotency-key') idempotencyKey?: string,
  ): Promise<IssuedTokenResponse> {
    const key = parseIdempotencyKey(idempotencyKey);
    return this.issuance.issueFor(principal, body, ip, key === undefined ? undefined : { key, credential: presentedCredential(req, principal) }, req.get('user-agent') ?? null);
  }

  @Post('refresh')
  @Public()
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Exchange a refresh token for a new access token and a new refresh token (rotation).',
    description:
      'The presented refresh token is used up. Presented again while the new refresh token has never been used (its answer was lost, or two terminals raced), it answers that pair again, within its own lifetime; once the new one was used, it is a reuse, and every token of the session is revoked.',
  })
  @ApiJsonBody(RefreshRequestSchema)
  @ApiJsonResponse(200, 'The new pair, shaped like an authorized poll.', AuthorizedResponseSchema)
  @ApiErrors([400, 'Malformed body.'], [401, 'invalid_grant: unknown, expired, revoked or reused refresh token.'])
  async refresh(@ValidBody(RefreshRequestSchema) body: RefreshRequest, @Ip() ip: string): Promise<AuthorizedResponse> {
    try {
      const { pair, user } = await this.refreshTokens.refresh(body.refreshToken, CLI_CLIENT_ID, ip);
      return { status: 'authorized', accessToken: pair.accessToken, refreshToken: pair.refreshToken, expiresAt: pair.expiresAt.toISOString(), user };
    } catch (err) {
      throw err instanceof InvalidGrantError ? refreshRefused(err) : err;
    }
  }

  @Post('logout')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke the bearer token of this request (with every token of its session, for a device login), and every token made with it.' })
  @ApiJsonResponse(204, 'Revoked.')
  @ApiErrors([401, 'Missing, unknown, expired or revoked token.'])
  async logout(@Principal() principal: AuthPrincipal, @Ip() ip: string): Promise<void> {
    await this.tokens.revokeForUser(principal.user.id, principal.tokenId!, ip);
  }
}
