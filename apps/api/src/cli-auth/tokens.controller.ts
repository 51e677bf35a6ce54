import { Body, Controller, Get, Header, HttpCode, Ip, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type AuthorizedResponse,
  AuthorizedResponseSchema,
  CLI_CLIENT_ID,
  type RefreshRequest,
  RefreshRequestSchema,
  type IssueTokenRequest,
  IssueTokenRequestSchema,
  IssuedTokenResponseSchema,
  type IssuedTokenResponse,
  type MeResponse,
  MeResponseSchema,
} from '@prospect/contract';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { Public } from '../auth/public.decorator.js';
import { ZodBodyPipe } from '../common/zod-body.pipe.js';
import { toPublicUser } from '../users/user.entity.js';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { type AuthPrincipal, Principal } from '../auth/auth-principal.js';
import { InvalidGrantError, RefreshTokensService } from '../refresh-tokens/refresh-tokens.service.js';
import { TokenIssuanceService } from './token-issuance.service.js';
import { TokensService } from '../tokens/tokens.service.js';
import { refreshRefused } from './cli-auth-answers.js';
import { RequireScope } from '../auth/require-scope.decorator.js';

@ApiTags('cli auth')
@ApiBearerAuth()
@Controller('api/cli/auth')
export class TokensController {
  constructor(
    private readonly tokens: TokensService,
    private readonly issuance: TokenIssuanceService,
    private readonly refreshTokens: RefreshTokensService,
  ) {}

  @Get('me')
  @RequireScope('profile')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Verify the bearer token and return its user and expiry.' })
  @ApiJsonResponse(200, 'The token is valid.', MeResponseSchema)
  @ApiErrors([401, 'Missing, unknown, expired or revoked token (see WWW-Authenticate).'], [403, 'insufficient_scope: the token lacks `profile`.'])
  me(@Principal() principal: AuthPrincipal): MeResponse {
    return { user: toPublicUser(principal.user), expiresAt: principal.expiresAt.toISOString() };
  }

  @Post('token')
  @AllowWebSession()
  @RequireScope('tokens')
  @HttpCode(201)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Issue a CLI token (for `prospect auth:login --token`).',
    description: 'For yourself, or, as an admin, for any user by `userEmail`.',
  })
  @ApiJsonBody(IssueTokenRequestSchema, false)
  @ApiJsonResponse(201, 'The token; its secret is shown only in this response.', IssuedTokenResponseSchema)
  @ApiErrors([400, 'Invalid body.'], [401, 'No valid credentials.'], [403, 'Not allowed to issue for that user, or insufficient_scope: the token lacks `tokens`.'], [404, 'No such user.'])
  issue(
    @Principal() principal: AuthPrincipal,
    @Body(new ZodBodyPipe(IssueTokenRequestSchema)) body: IssueTokenRequest,
    @Ip() ip: string,
  ): Promise<IssuedTokenResponse> {
    return this.issuance.issueFor(principal, body, ip);
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
  async refresh(@Body(new ZodBodyPipe(RefreshRequestSchema)) body: RefreshRequest, @Ip() ip: string): Promise<AuthorizedResponse> {
    try {
      const { pair, user } = await this.refreshTokens.refresh(body.refreshToken, CLI_CLIENT_ID, ip);
      return { status: 'authorized', accessToken: pair.accessToken, refreshToken: pair.refreshToken, expiresAt: pair.expiresAt.toISOString(), user };
    } catch (err) {
      throw err instanceof InvalidGrantError ? refreshRefused(err) : err;
    }
  }

  @Post('logout')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke the bearer token of this request (with every token of its session, for a device login).' })
  @ApiJsonResponse(204, 'Revoked.')
  @ApiErrors([401, 'Missing, unknown, expired or revoked token.'])
  async logout(@Principal() principal: AuthPrincipal, @Ip() ip: string): Promise<void> {
    await this.tokens.revokeForUser(principal.user.id, principal.tokenId!, ip);
  }
}
