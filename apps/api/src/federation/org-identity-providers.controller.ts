import { Controller, Delete, Get, Header, HttpCode, Param, Patch, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type AdminIdentityProvider,
  AdminIdentityProviderSchema,
  type CreateIdentityProviderRequest,
  CreateIdentityProviderRequestSchema,
  type IdentityProviderConnectionTest,
  IdentityProviderConnectionTestSchema,
  type UpdateIdentityProviderRequest,
  UpdateIdentityProviderRequestSchema,
} from '@prospect/contract';
import * as z from 'zod/mini';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import { Actor, OrgMembershipGuard, RequireOrgRole } from '../organizations/org-membership.guard.js';
import type { OrgActor } from '../organizations/organizations.service.js';
import { IdentityProvidersService, type ProviderOwner } from './identity-providers.service.js';

const ownerOf = (actor: OrgActor): ProviderOwner => ({ organizationId: actor.organization.id });

/**
 * An organization's own OpenID providers (issue #44), for its admins and owners: the fields of the
 * instance's `/api/admin/identity-providers`, for the organization's verified domains only, each
 * change in the organization's log. A bearer token with `orgs`, or a signed-in browser with its
 * CSRF token.
 */
@ApiTags('organizations')
@ApiBearerAuth()
@Controller('api/orgs/:slug/identity-providers')
@RequireScope('orgs')
@AllowWebSession()
@UseGuards(OrgMembershipGuard)
@RequireOrgRole('admin', 'manage its identity providers')
export class OrgIdentityProvidersController {
  constructor(private readonly providers: IdentityProvidersService) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'The organization’s identity providers, oldest first (admins). Client secrets are never shown.' })
  @ApiJsonResponse(200, 'The providers.', z.array(AdminIdentityProviderSchema))
  @ApiErrors([401, 'No valid credential.'], [403, 'The token lacks `orgs`, or your role may not.'], [404, 'No such organization of yours.'])
  list(@Actor() actor: OrgActor): Promise<AdminIdentityProvider[]> {
    return this.providers.list(ownerOf(actor));
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Register an OpenID provider for the organization’s verified domains (admins).',
    description:
      'As `POST /api/admin/identity-providers`, with two rules of organizations: every one of `emailDomains` must be a domain the organization has verified (409 naming the one that is not), and `enforce` is refused: a domain is enforced on the domain (`PATCH /api/orgs/{slug}/domains/{domain}` `{"enforceSso": true}`). At every sign-in the address the provider asserts must be in a domain the organization has verified at that moment.',
  })
  @ApiJsonBody(CreateIdentityProviderRequestSchema)
  @ApiJsonResponse(201, 'Registered.', AdminIdentityProviderSchema)
  @ApiErrors(
    [400, 'Invalid body, `enforce`, or an issuer that is not https or not an OpenID provider Prospect can use.'],
    [401, 'No valid credential.'],
    [403, 'Your role may not.'],
    [404, 'No such organization of yours.'],
    [409, 'A domain the organization has not verified, the id or issuer is taken, or a domain belongs to another provider.'],
  )
  create(@Actor() actor: OrgActor, @ValidBody(CreateIdentityProviderRequestSchema) body: CreateIdentityProviderRequest): Promise<AdminIdentityProvider> {
    return this.providers.create(body, actor.userId, actor.ip, ownerOf(actor));
  }

  @Get(':id')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'One of the organization’s identity providers (admins).' })
  @ApiJsonResponse(200, 'The provider.', AdminIdentityProviderSchema)
  @ApiErrors([401, 'No valid credential.'], [403, 'Your role may not.'], [404, 'No such provider of the organization.'])
  get(@Actor() actor: OrgActor, @Param('id') id: string): Promise<AdminIdentityProvider> {
    return this.providers.get(id, ownerOf(actor));
  }

  @Patch(':id')
  @ApiOperation({
    summary: 'Change one, or disable or enable it (admins).',
    description: 'All the changes of one request in one transaction. `{"disabled": true}` refuses its sign-ins and ends every browser session it started. New `emailDomains` must all be verified by the organization.',
  })
  @ApiJsonBody(UpdateIdentityProviderRequestSchema)
  @ApiJsonResponse(200, 'The provider as it is now.', AdminIdentityProviderSchema)
  @ApiErrors([400, 'Invalid body, or `enforce`.'], [401, 'No valid credential.'], [403, 'Your role may not.'], [404, 'No such provider of the organization.'], [409, 'An unverified domain, or one of another provider.'])
  async update(@Actor() actor: OrgActor, @Param('id') id: string, @ValidBody(UpdateIdentityProviderRequestSchema) body: UpdateIdentityProviderRequest): Promise<AdminIdentityProvider> {
    return (await this.providers.update(id, body, actor.userId, actor.ip, ownerOf(actor))).provider;
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete one: the browser sessions it started end and its links go; the accounts stay (admins).' })
  @ApiErrors([401, 'No valid credential.'], [403, 'Your role may not.'], [404, 'No such provider of the organization.'])
  async remove(@Actor() actor: OrgActor, @Param('id') id: string): Promise<void> {
    await this.providers.remove(id, actor.userId, actor.ip, ownerOf(actor));
  }

  @Post(':id/test')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Test connection: read the provider’s discovery document now (admins).',
    description: 'Answers what it found (`ok: true`: its issuer and endpoints) or the one sentence saying why it could not be read (`ok: false`). Nothing is stored.',
  })
  @ApiJsonResponse(200, 'What discovery found.', IdentityProviderConnectionTestSchema)
  @ApiErrors([401, 'No valid credential.'], [403, 'Your role may not.'], [404, 'No such provider of the organization.'])
  test(@Actor() actor: OrgActor, @Param('id') id: string): Promise<IdentityProviderConnectionTest> {
    return this.providers.testConnection(id, ownerOf(actor));
  }
}
