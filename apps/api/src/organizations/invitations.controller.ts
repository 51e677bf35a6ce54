import { Controller, Delete, Get, Header, HttpCode, Param, ParseUUIDPipe, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type CreateInvitationRequest, CreateInvitationRequestSchema, type OrganizationInvitation, OrganizationInvitationSchema } from '@prospect/contract';
import * as z from 'zod/mini';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import { Actor, OrgMembershipGuard, RequireOrgRole } from './org-membership.guard.js';
import { OrganizationInvitationsService } from './organization-invitations.service.js';
import type { OrgActor } from './organizations.service.js';

const uuid = new ParseUUIDPipe();

/** An organization's invitations (issue #44): its admins and owners, with a bearer token carrying `orgs` or a signed-in browser with its CSRF token. */
@ApiTags('organizations')
@ApiBearerAuth()
@Controller('api/orgs/:slug/invitations')
@RequireScope('orgs')
@AllowWebSession()
@UseGuards(OrgMembershipGuard)
@RequireOrgRole('admin', 'manage invitations')
export class InvitationsController {
  constructor(private readonly invitations: OrganizationInvitationsService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Invite an address with a role (admins; an owner’s role only by an owner).',
    description: 'Mails a single-use link, good for 7 days, to the address; an open invitation to the same address is replaced. At most 30 invitations an hour per organization.',
  })
  @ApiJsonBody(CreateInvitationRequestSchema)
  @ApiJsonResponse(201, 'Invited; the mail is queued.', OrganizationInvitationSchema)
  @ApiErrors([400, 'Invalid body.'], [403, 'Your role may not.'], [404, 'No such organization of yours.'], [429, 'Too many invitations this hour.'])
  create(@Actor() actor: OrgActor, @ValidBody(CreateInvitationRequestSchema) body: CreateInvitationRequest): Promise<OrganizationInvitation> {
    return this.invitations.create(actor, body);
  }

  @Get()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'The open invitations (neither accepted, revoked nor expired), newest first (admins).' })
  @ApiJsonResponse(200, 'The open invitations.', z.array(OrganizationInvitationSchema))
  @ApiErrors([403, 'Your role may not.'], [404, 'No such organization of yours.'])
  list(@Actor() actor: OrgActor): Promise<OrganizationInvitation[]> {
    return this.invitations.list(actor.organization.id);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke an open invitation: its link stops working (admins).' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such open invitation.'])
  async revoke(@Actor() actor: OrgActor, @Param('id', uuid) id: string): Promise<void> {
    await this.invitations.revoke(actor, id);
  }
}
