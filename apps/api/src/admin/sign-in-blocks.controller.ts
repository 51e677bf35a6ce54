import { Controller, HttpCode, Ip, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type ClearSignInBlockRequest,
  ClearSignInBlockRequestSchema,
  type ClearSignInBlockResponse,
  ClearSignInBlockResponseSchema,
} from '@prospect/contract';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import { SignInBlocksService } from './sign-in-blocks.service.js';
import { type AuthPrincipal, Principal } from '../auth/auth-principal.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { AdminsOnlyGuard } from './admins-only.guard.js';

@ApiTags('admin')
@ApiBearerAuth()
@Controller('api/admin/sign-in-blocks')
@RequireScope('admin')
@UseGuards(AdminsOnlyGuard)
export class SignInBlocksController {
  constructor(private readonly blocks: SignInBlocksService) {}

  @Post('clear')
  @HttpCode(200)
  @ApiOperation({
    summary: "Lift an account's sign-in block (admins).",
    description:
      'Clears the failed sign-ins counted against the account from browsers without its device cookie, and its earlier blocks. Browsers that signed in to the account before are never blocked by them.',
  })
  @ApiJsonBody(ClearSignInBlockRequestSchema)
  @ApiJsonResponse(200, '`cleared` is true when there were failures to clear.', ClearSignInBlockResponseSchema)
  @ApiErrors([400, 'Invalid body.'], [401, 'No valid bearer token.'], [403, 'The bearer is not an admin, or insufficient_scope: the token lacks `admin`.'])
  async clear(
    @Principal() caller: AuthPrincipal,
    @ValidBody(ClearSignInBlockRequestSchema) body: ClearSignInBlockRequest,
    @Ip() ip: string,
  ): Promise<ClearSignInBlockResponse> {
    return { cleared: await this.blocks.clear(body.email, caller.user.id, ip) };
  }
}
