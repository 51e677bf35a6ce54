import { Controller, Delete, Get, HttpCode, Ip, Param, ParseUUIDPipe, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import {
  type AdminUser,
  type AdminUserPage,
  AdminUserPageSchema,
  AdminUserSchema,
  ClearSignInBlockResponseSchema,
  type ClearSignInBlockResponse,
  type InviteUserRequest,
  InviteUserRequestSchema,
  type UpdateUserRequest,
  UpdateUserRequestSchema,
} from '@prospect/contract';
import { type AuthPrincipal, Principal } from '../auth/auth-principal.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { AdminsOnlyGuard } from './admins-only.guard.js';
import { badRequest, notFound } from '../common/api-exception.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import { type AdminGrant, AdminUsersService } from './admin-users.service.js';

/** The grant the caller acts with, for the audit trail: the bearer token (and its session). */
const grantOf = (caller: AuthPrincipal): AdminGrant | undefined =>
  caller.tokenId ? { tokenId: caller.tokenId, grantId: caller.grantId ?? null } : undefined;


/** A page number from the query: 1 when absent; a 400 for anything but a whole number from 1 to 10,000. */
function pageNumber(raw: unknown): number {
  if (raw === undefined) return 1;
  const page = typeof raw === 'string' && /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(page >= 1 && page <= 10_000)) throw badRequest('page must be a whole number from 1 to 10000.');
  return page;
}

/**
 * The people of this service as admins manage them on /admin/users, as a JSON API (an admin's
 * bearer token with `admin`: asked for, and fresh). Promoting, demoting, removing a second factor
 * and inviting are audited with the grant that did them (`admin.api_action`).
 */
@ApiTags('admin')
@ApiBearerAuth()
@Controller('api/admin/users')
@RequireScope('admin')
@UseGuards(AdminsOnlyGuard)
export class AdminUsersController {
  constructor(private readonly admin: AdminUsersService) {}

  @Get()
  @ApiOperation({ summary: 'People, newest first, 50 a page, searched by name or e-mail (admins).' })
  @ApiQuery({ name: 'q', required: false, description: 'Part of a name or an e-mail address.' })
  @ApiQuery({ name: 'page', required: false, description: 'From 1.' })
  @ApiJsonResponse(200, 'One page.', AdminUserPageSchema)
  @ApiErrors([400, 'A bad page or search.'], [401, 'No valid bearer token.'], [403, 'Not an admin, or the token lacks `admin`.'])
  async list(@Query('q') q: unknown, @Query('page') page: unknown): Promise<AdminUserPage> {
    if (q !== undefined && (typeof q !== 'string' || q.length > 320)) throw badRequest('q must be one piece of text of at most 320 characters.');
    return this.admin.list(q ?? '', pageNumber(page));
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Invite a person: the account is made without a password, and a mail lets them choose one within 7 days (admins).' })
  @ApiJsonBody(InviteUserRequestSchema)
  @ApiJsonResponse(201, 'Invited.', AdminUserSchema)
  @ApiErrors([400, 'Invalid body.'], [401, 'No valid bearer token.'], [403, 'Not an admin.'], [409, 'The address has an account.'])
  async invite(@Principal() caller: AuthPrincipal, @ValidBody(InviteUserRequestSchema) body: InviteUserRequest, @Ip() ip: string): Promise<AdminUser> {
    return this.admin.invite(body, caller.user.id, ip, grantOf(caller));
  }

  @Get(':id')
  @ApiOperation({ summary: 'One person (admins).' })
  @ApiJsonResponse(200, 'The person.', AdminUserSchema)
  @ApiErrors([400, 'Not an id.'], [401, 'No valid bearer token.'], [403, 'Not an admin.'], [404, 'No such account.'])
  async get(@Param('id', new ParseUUIDPipe()) id: string): Promise<AdminUser> {
    return this.admin.get(id);
  }

  @Patch(':id')
  @ApiOperation({
    summary: 'Disable or enable a person, make or remove an administrator (admins).',
    description:
      'Disabling revokes every access token, refresh family and web session of the person in one transaction; every replica refuses their tokens within a second, with `error_description="account disabled"`. Nobody disables their own account, and the last enabled administrator stays one.',
  })
  @ApiJsonBody(UpdateUserRequestSchema)
  @ApiJsonResponse(200, 'The person as they are now.', AdminUserSchema)
  @ApiErrors([400, 'Invalid body, or one’s own account.'], [401, 'No valid bearer token.'], [403, 'Not an admin.'], [404, 'No such account.'], [409, 'The last administrator.'])
  async update(
    @Principal() caller: AuthPrincipal,
    @Param('id', new ParseUUIDPipe()) id: string,
    @ValidBody(UpdateUserRequestSchema) body: UpdateUserRequest,
    @Ip() ip: string,
  ): Promise<AdminUser> {
    return this.admin.update(id, body, caller.user.id, ip, grantOf(caller));
  }

  @Post(':id/reset-link')
  @HttpCode(202)
  @ApiOperation({ summary: 'Mail the person a password-reset link (admins).' })
  @ApiErrors([400, 'The account is disabled.'], [401, 'No valid bearer token.'], [403, 'Not an admin.'], [404, 'No such account.'])
  async sendResetLink(@Principal() caller: AuthPrincipal, @Param('id', new ParseUUIDPipe()) id: string, @Ip() ip: string): Promise<void> {
    await this.admin.sendResetLink(id, caller.user.id, ip);
  }

  @Delete(':id/second-factor')
  @HttpCode(204)
  @ApiOperation({ summary: "Remove the person's authenticator app and recovery codes, and end their web sessions (a lost phone; admins)." })
  @ApiErrors([401, 'No valid bearer token.'], [403, 'Not an admin.'], [404, 'No such account, or it has no second factor.'])
  async removeSecondFactor(@Principal() caller: AuthPrincipal, @Param('id', new ParseUUIDPipe()) id: string, @Ip() ip: string): Promise<void> {
    if (!(await this.admin.removeSecondFactor(id, caller.user.id, ip, grantOf(caller)))) throw notFound('This account has no second factor.');
  }

  @Post(':id/clear-sign-in-block')
  @HttpCode(200)
  @ApiOperation({ summary: "Lift the person's sign-in block (admins)." })
  @ApiJsonResponse(200, '`cleared` is true when there were failures to clear.', ClearSignInBlockResponseSchema)
  @ApiErrors([401, 'No valid bearer token.'], [403, 'Not an admin.'], [404, 'No such account.'])
  async clearSignInBlock(@Principal() caller: AuthPrincipal, @Param('id', new ParseUUIDPipe()) id: string, @Ip() ip: string): Promise<ClearSignInBlockResponse> {
    return { cleared: await this.admin.clearSignInBlock(id, caller.user.id, ip) };
  }
}
