import { Controller, Delete, Get, HttpCode, Ip, Param, Patch, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type AdminIdentityProvider,
  AdminIdentityProviderSchema,
  type CreateIdentityProviderRequest,
  CreateIdentityProviderRequestSchema,
  type UpdateIdentityProviderRequest,
  UpdateIdentityProviderRequestSchema,
} from '@prospect/contract';
import * as z from 'zod/mini';
import { type AuthPrincipal, Principal } from '../auth/auth-principal.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import { IdentityProvidersService } from '../federation/identity-providers.service.js';
import { AdminsOnlyGuard } from './admins-only.guard.js';

/** The identity providers people sign in through (issue #34), as admins manage them on /admin/identity-providers, as a JSON API. */
@ApiTags('admin')
@ApiBearerAuth()
@Controller('api/admin/identity-providers')
@RequireScope('admin')
@UseGuards(AdminsOnlyGuard)
export class IdentityProvidersController {
  constructor(private readonly providers: IdentityProvidersService) {}

  @Get()
  @ApiOperation({ summary: 'Every identity provider, oldest first (admins). Client secrets are never shown.' })
  @ApiJsonResponse(200, 'The providers.', z.array(AdminIdentityProviderSchema))
  @ApiErrors([401, 'No valid bearer token.'], [403, 'The bearer is not an admin, or the token lacks `admin`.'])
  list(): Promise<AdminIdentityProvider[]> {
    return this.providers.list();
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Configure an OpenID provider (admins).',
    description:
      'The issuer (given, or filled in by the `google` or `microsoft` preset with its `tenant`) is discovered through `/.well-known/openid-configuration`; it must be https (http only for localhost). The client secret is kept sealed and never shown again. The answer names the `redirectUri` to register at the provider: `{PUBLIC_URL}/login/sso/{id}/callback`.',
  })
  @ApiJsonBody(CreateIdentityProviderRequestSchema)
  @ApiJsonResponse(201, 'Configured.', AdminIdentityProviderSchema)
  @ApiErrors(
    [400, 'Invalid body, or an issuer that is not https or not an OpenID provider Prospect can use.'],
    [401, 'No valid bearer token.'],
    [403, 'Not an admin.'],
    [409, 'The id or the issuer is configured already, or a domain belongs to another provider.'],
  )
  create(@Principal() caller: AuthPrincipal, @ValidBody(CreateIdentityProviderRequestSchema) body: CreateIdentityProviderRequest, @Ip() ip: string): Promise<AdminIdentityProvider> {
    return this.providers.create(body, caller.user.id, ip);
  }

  @Get(':id')
  @ApiOperation({ summary: 'One identity provider (admins).' })
  @ApiJsonResponse(200, 'The provider.', AdminIdentityProviderSchema)
  @ApiErrors([401, 'No valid bearer token.'], [403, 'Not an admin.'], [404, 'No such provider.'])
  get(@Param('id') id: string): Promise<AdminIdentityProvider> {
    return this.providers.get(id);
  }

  @Patch(':id')
  @ApiOperation({
    summary: 'Change a provider, enforce it, or disable or enable it (admins).',
    description:
      'All the changes of one request happen in one transaction. `{"disabled": true}` refuses its sign-ins and ends every browser session started through it. `{"enforce": true}` ends password sign-in, reset mail and passwords set by invitation for its domains at once (existing sessions stay; CLI and extension grants end by their own rules, or an admin revokes them).',
  })
  @ApiJsonBody(UpdateIdentityProviderRequestSchema)
  @ApiJsonResponse(200, 'The provider as it is now.', AdminIdentityProviderSchema)
  @ApiErrors(
    [400, 'Invalid body.'],
    [401, 'No valid bearer token.'],
    [403, 'Not an admin.'],
    [404, 'No such provider.'],
    [409, 'A domain belongs to another provider, or the provider is an organization’s (`organization`), which its admins manage at `/api/orgs/{slug}/identity-providers`.'],
  )
  async update(
    @Principal() caller: AuthPrincipal,
    @Param('id') id: string,
    @ValidBody(UpdateIdentityProviderRequestSchema) body: UpdateIdentityProviderRequest,
    @Ip() ip: string,
  ): Promise<AdminIdentityProvider> {
    return (await this.providers.update(id, body, caller.user.id, ip)).provider;
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a provider: the browser sessions it started end and its links go; the accounts stay (admins).' })
  @ApiErrors([401, 'No valid bearer token.'], [403, 'Not an admin.'], [404, 'No such provider.'], [409, 'An organization’s provider (`organization`), which its admins manage.'])
  async remove(@Principal() caller: AuthPrincipal, @Param('id') id: string, @Ip() ip: string): Promise<void> {
    await this.providers.remove(id, caller.user.id, ip);
  }
}
