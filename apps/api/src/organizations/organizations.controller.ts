import { Controller, Delete, Get, Header, HttpCode, Ip, Param, ParseUUIDPipe, Patch, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type CreateOrganizationRequest,
  CreateOrganizationRequestSchema,
  type Organization,
  type OrganizationMember,
  OrganizationMemberSchema,
  OrganizationSchema,
  type UpdateMemberRequest,
  UpdateMemberRequestSchema,
  type UpdateOrganizationRequest,
  UpdateOrganizationRequestSchema,
} from '@prospect/contract';
import * as z from 'zod/mini';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { type AuthPrincipal, Principal } from '../auth/auth-principal.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import { Actor, OrgMembershipGuard, RequireOrgRole } from './org-membership.guard.js';
import { type OrgActor, OrganizationsService } from './organizations.service.js';

const uuid = new ParseUUIDPipe();

/** Organizations and their members (issue #44): a bearer token with `orgs`, or a signed-in browser with its CSRF token. */
@ApiTags('organizations')
@ApiBearerAuth()
@Controller('api/orgs')
@RequireScope('orgs')
@AllowWebSession()
export class OrganizationsController {
  constructor(private readonly organizations: OrganizationsService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Create an organization; you are its owner.' })
  @ApiJsonBody(CreateOrganizationRequestSchema)
  @ApiJsonResponse(201, 'Created.', OrganizationSchema)
  @ApiErrors([400, 'Invalid body.'], [401, 'No valid credential.'], [403, 'The token lacks `orgs`.'], [409, 'The slug is taken.'])
  create(@Principal() caller: AuthPrincipal, @ValidBody(CreateOrganizationRequestSchema) body: CreateOrganizationRequest, @Ip() ip: string): Promise<Organization> {
    return this.organizations.create(caller.user.id, body, ip);
  }

  @Get()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Your organizations, with your role in each.' })
  @ApiJsonResponse(200, 'Yours, by name.', z.array(OrganizationSchema))
  @ApiErrors([401, 'No valid credential.'], [403, 'The token lacks `orgs`.'])
  list(@Principal() caller: AuthPrincipal): Promise<Organization[]> {
    return this.organizations.listFor(caller.user.id, caller.issuedAt ?? null);
  }

  @Get(':slug')
  @Header('Cache-Control', 'no-store')
  @UseGuards(OrgMembershipGuard)
  @ApiOperation({ summary: 'One of your organizations.' })
  @ApiJsonResponse(200, 'The organization, with your role.', OrganizationSchema)
  @ApiErrors([401, 'No valid credential.'], [404, 'No such organization of yours.'])
  get(@Actor() actor: OrgActor): Organization {
    return actor.organization;
  }

  @Patch(':slug')
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'rename it')
  @ApiOperation({ summary: 'Rename it (admins and owners).' })
  @ApiJsonBody(UpdateOrganizationRequestSchema)
  @ApiJsonResponse(200, 'As it is now.', OrganizationSchema)
  @ApiErrors([400, 'Invalid body.'], [403, 'Your role may not.'], [404, 'No such organization of yours.'])
  rename(@Actor() actor: OrgActor, @ValidBody(UpdateOrganizationRequestSchema) body: UpdateOrganizationRequest): Promise<Organization> {
    return this.organizations.rename(actor, body.name);
  }

  @Delete(':slug')
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('owner', 'delete it')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete it and everything it owns (owners, re-confirmed).',
    description:
      'Asks the owner to have confirmed who they are within SUDO_SECONDS: from a signed-in browser in sudo mode. A bearer token is refused: delete it on its page, `/orgs/{slug}`, which asks.',
  })
  @ApiErrors([403, 'Not an owner, or not re-confirmed.'], [404, 'No such organization of yours.'])
  async remove(@Principal() caller: AuthPrincipal, @Actor() actor: OrgActor): Promise<void> {
    await this.organizations.delete(actor, caller);
  }

  @Get(':slug/members')
  @Header('Cache-Control', 'no-store')
  @UseGuards(OrgMembershipGuard)
  @ApiOperation({ summary: 'Its members with their roles: owners, then admins, then members.' })
  @ApiJsonResponse(200, 'The members.', z.array(OrganizationMemberSchema))
  @ApiErrors([401, 'No valid credential.'], [404, 'No such organization of yours.'])
  members(@Actor() actor: OrgActor): Promise<OrganizationMember[]> {
    return this.organizations.listMembers(actor.organization.id);
  }

  @Patch(':slug/members/:userId')
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'change roles')
  @HttpCode(204)
  @ApiOperation({ summary: 'Change a member’s role: admins for members and admins, owners for anyone; never the last owner’s.' })
  @ApiJsonBody(UpdateMemberRequestSchema)
  @ApiErrors([400, 'Invalid body.'], [403, 'Your role may not.'], [404, 'No such member.'], [409, 'The last owner.'])
  async changeRole(@Actor() actor: OrgActor, @Param('userId', uuid) userId: string, @ValidBody(UpdateMemberRequestSchema) body: UpdateMemberRequest): Promise<void> {
    await this.organizations.changeRole(actor, userId, body.role);
  }

  @Delete(':slug/members/:userId')
  @UseGuards(OrgMembershipGuard)
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove a member (admins and owners), or leave (your own id); never the last owner.' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such member.'], [409, 'The last owner.'])
  async removeMember(@Actor() actor: OrgActor, @Param('userId', uuid) userId: string): Promise<void> {
    await this.organizations.removeMember(actor, userId);
  }
}
