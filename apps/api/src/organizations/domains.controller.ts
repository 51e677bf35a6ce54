import { Controller, Delete, Get, Header, HttpCode, Ip, Param, ParseUUIDPipe, Patch, type PipeTransform, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type AddDomainRequest,
  AddDomainRequestSchema,
  EmailDomainSchema,
  type JoinableOrganization,
  JoinableOrganizationSchema,
  type JoinOrganizationResponse,
  JoinOrganizationResponseSchema,
  type JoinRequest,
  JoinRequestSchema,
  type OrganizationDomain,
  OrganizationDomainSchema,
  type UpdateDomainRequest,
  UpdateDomainRequestSchema,
} from '@prospect/contract';
import * as z from 'zod/mini';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { type AuthPrincipal, Principal } from '../auth/auth-principal.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { badRequest } from '../common/api-exception.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import { OrganizationDomainsService } from './organization-domains.service.js';
import { Actor, OrgMembershipGuard, RequireOrgRole } from './org-membership.guard.js';
import type { OrgActor } from './organizations.service.js';

const uuid = new ParseUUIDPipe();

/** The `:domain` of a path, as the body's `domain` is read (lower case, a plausible domain); 400 otherwise. */
class DomainParam implements PipeTransform<string, string> {
  transform(value: string): string {
    const parsed = z.safeParse(EmailDomainSchema, value);
    if (!parsed.success) throw badRequest(`The domain in the path must be a domain such as example.com (got ${JSON.stringify(String(value).slice(0, 60))}).`);
    return parsed.data;
  }
}
const domainParam = new DomainParam();

/**
 * Verified domains of an organization and joining through them (issue #44): a bearer token with
 * `orgs`, or a signed-in browser with its CSRF token. Listed in OrganizationsModule before
 * OrganizationsController, so that `GET /api/orgs/joinable` is matched before `GET /api/orgs/:slug`
 * (`joinable` is also refused as a slug).
 */
@ApiTags('organizations')
@ApiBearerAuth()
@Controller('api/orgs')
@RequireScope('orgs')
@AllowWebSession()
export class DomainsController {
  constructor(private readonly domains: OrganizationDomainsService) {}

  @Get('joinable')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Organizations you may join, or ask to join, through the verified domain of your verified address.' })
  @ApiJsonResponse(200, 'Those organizations (not yours yet).', z.array(JoinableOrganizationSchema))
  @ApiErrors([401, 'No valid credential.'], [403, 'The token lacks `orgs`.'])
  joinable(@Principal() caller: AuthPrincipal): Promise<JoinableOrganization[]> {
    return this.domains.joinable(caller.user.id);
  }

  @Post(':slug/join')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Join through a verified domain: at once where its policy is `auto`, by a request an admin approves where it is `request`.',
    description: 'Your address must be verified and in one of the organization’s verified domains. A member already gets `status: "member"` with their role.',
  })
  @ApiJsonResponse(200, 'A member now, or a request recorded.', JoinOrganizationResponseSchema)
  @ApiErrors([401, 'No valid credential.'], [403, 'Your address is not verified, or the domain takes people by invitation only.'], [404, 'No such organization for your address’s domain.'])
  join(@Principal() caller: AuthPrincipal, @Param('slug') slug: string, @Ip() ip: string): Promise<JoinOrganizationResponse> {
    return this.domains.join(slug, caller.user.id, ip);
  }

  @Get(':slug/domains')
  @Header('Cache-Control', 'no-store')
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'see its domains')
  @ApiOperation({ summary: 'Its domains, each with the TXT record that verifies it (admins and owners).' })
  @ApiJsonResponse(200, 'By name.', z.array(OrganizationDomainSchema))
  @ApiErrors([403, 'Your role may not.'], [404, 'No such organization of yours.'])
  list(@Actor() actor: OrgActor): Promise<OrganizationDomain[]> {
    return this.domains.list(actor);
  }

  @Post(':slug/domains')
  @HttpCode(201)
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'add domains')
  @ApiOperation({ summary: 'Add a domain, unverified: publish its `verificationRecord` as a TXT record on the domain, then verify it.' })
  @ApiJsonBody(AddDomainRequestSchema)
  @ApiJsonResponse(201, 'Added.', OrganizationDomainSchema)
  @ApiErrors([400, 'Invalid body.'], [403, 'Your role may not.'], [404, 'No such organization of yours.'], [409, 'Another organization verified it, or this one has it.'])
  add(@Actor() actor: OrgActor, @ValidBody(AddDomainRequestSchema) body: AddDomainRequest): Promise<OrganizationDomain> {
    return this.domains.add(actor, body.domain);
  }

  @Post(':slug/domains/:domain/verify')
  @HttpCode(200)
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'verify domains')
  @ApiOperation({ summary: 'Look for the TXT record now; verified when it is there.', description: 'Counted against the organization’s verifications of the hour before DNS is asked.' })
  @ApiJsonResponse(200, 'Verified.', OrganizationDomainSchema)
  @ApiErrors(
    [403, 'Your role may not.'],
    [404, 'No such domain.'],
    [409, 'The record is not there (the message says what DNS answered), or another organization verified it first.'],
    [429, 'Too many verifications this hour.'],
    [503, 'The DNS server could not be asked.'],
  )
  verify(@Actor() actor: OrgActor, @Param('domain', domainParam) domain: string): Promise<OrganizationDomain> {
    return this.domains.verify(actor, domain);
  }

  @Patch(':slug/domains/:domain')
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'change domains')
  @ApiOperation({ summary: 'Set who may join through it (`joinPolicy`) and whether its people sign in only through the organization’s identity provider (`enforceSso`).' })
  @ApiJsonBody(UpdateDomainRequestSchema)
  @ApiJsonResponse(200, 'As it is now.', OrganizationDomainSchema)
  @ApiErrors([400, 'Invalid body.'], [403, 'Your role may not.'], [404, 'No such domain.'], [409, 'Enforcing an unverified domain, or without an enabled identity provider of the organization.'])
  update(@Actor() actor: OrgActor, @Param('domain', domainParam) domain: string, @ValidBody(UpdateDomainRequestSchema) body: UpdateDomainRequest): Promise<OrganizationDomain> {
    return this.domains.update(actor, domain, body);
  }

  @Delete(':slug/domains/:domain')
  @HttpCode(204)
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'remove domains')
  @ApiOperation({ summary: 'Remove a domain; members who joined through it stay.' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such domain.'])
  async remove(@Actor() actor: OrgActor, @Param('domain', domainParam) domain: string): Promise<void> {
    await this.domains.remove(actor, domain);
  }

  @Get(':slug/join-requests')
  @Header('Cache-Control', 'no-store')
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'see requests to join')
  @ApiOperation({ summary: 'People who asked to join through a verified domain, oldest first (admins and owners).' })
  @ApiJsonResponse(200, 'The requests.', z.array(JoinRequestSchema))
  @ApiErrors([403, 'Your role may not.'], [404, 'No such organization of yours.'])
  joinRequests(@Actor() actor: OrgActor): Promise<JoinRequest[]> {
    return this.domains.listJoinRequests(actor);
  }

  @Post(':slug/join-requests/:userId/approve')
  @HttpCode(204)
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'approve requests to join')
  @ApiOperation({ summary: 'Approve a request: the person becomes a member, if their address is still in a verified domain.' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such request.'], [409, 'Their address is no longer in a verified domain: the request ended.'])
  async approve(@Actor() actor: OrgActor, @Param('userId', uuid) userId: string): Promise<void> {
    await this.domains.approve(actor, userId);
  }

  @Delete(':slug/join-requests/:userId')
  @HttpCode(204)
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'decline requests to join')
  @ApiOperation({ summary: 'Decline a request.' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such request.'])
  async decline(@Actor() actor: OrgActor, @Param('userId', uuid) userId: string): Promise<void> {
    await this.domains.decline(actor, userId);
  }
}
