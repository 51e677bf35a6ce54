import { Controller, Delete, Get, Header, HttpCode, Patch, Put, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type PutSamlConnectionRequest,
  PutSamlConnectionRequestSchema,
  type SamlConnection,
  SamlConnectionSchema,
  type SamlServiceProvider,
  SamlServiceProviderSchema,
  type UpdateSamlConnectionRequest,
  UpdateSamlConnectionRequestSchema,
} from '@prospect/contract';
import { AllowWebSession } from '../../auth/allow-web-session.decorator.js';
import { RequireScope } from '../../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../../common/openapi.js';
import { ValidBody } from '../../common/valid-body.js';
import { Actor, OrgMembershipGuard, RequireOrgRole } from '../../organizations/org-membership.guard.js';
import type { OrgActor } from '../../organizations/organizations.service.js';
import { SamlConnectionsService } from './saml-connections.service.js';

/**
 * An organization's SAML 2.0 connection (issue #47), for its admins and owners: a bearer token
 * with `orgs`, or a signed-in browser with its CSRF token. Every change in the organization's log.
 */
@ApiTags('organizations')
@ApiBearerAuth()
@Controller('api/orgs/:slug/saml')
@RequireScope('orgs')
@AllowWebSession()
@UseGuards(OrgMembershipGuard)
@RequireOrgRole('admin', 'manage its SAML connection')
export class OrgSamlController {
  constructor(private readonly connections: SamlConnectionsService) {}

  @Put()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Register the organization’s SAML IdP by its metadata XML, or take new metadata of the same IdP (admins).',
    description:
      'Reads the IdP’s entityID, its HTTP-Redirect SingleSignOnService and its signing certificate(s); nothing is fetched. Answers what to enter at the IdP. A new IdP (another entityID) is refused while a connection exists: remove it first. A new connection signs nobody in until `PATCH` allows sign-up or people of the organization’s verified domains have accounts.',
  })
  @ApiJsonBody(PutSamlConnectionRequestSchema)
  @ApiJsonResponse(200, 'Registered: the service provider’s entity id, ACS URL and metadata URL.', SamlServiceProviderSchema)
  @ApiErrors(
    [400, 'Invalid body, or metadata that lacks what Prospect needs (named).'],
    [401, 'No valid credential.'],
    [403, 'The token lacks `orgs`, or your role may not.'],
    [404, 'No such organization of yours.'],
    [409, 'Another IdP is connected, or this entityID is registered elsewhere.'],
  )
  put(@Actor() actor: OrgActor, @ValidBody(PutSamlConnectionRequestSchema) body: PutSamlConnectionRequest): Promise<SamlServiceProvider> {
    return this.connections.put(actor, body.idpMetadataXml);
  }

  @Get()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'The organization’s SAML connection (admins).' })
  @ApiJsonResponse(200, 'The connection.', SamlConnectionSchema)
  @ApiErrors([401, 'No valid credential.'], [403, 'Your role may not.'], [404, 'No such organization of yours, or no connection.'])
  get(@Actor() actor: OrgActor): Promise<SamlConnection> {
    return this.connections.get(actor.organization);
  }

  @Patch()
  @ApiOperation({
    summary: 'Set its policy (admins).',
    description:
      '`enforce`: people of the organization’s verified domains sign in only through it (password, reset mail and passkeys refused for them). `allowSignUp`: a first sign-in makes the account and the membership. `secondFactorContexts`: the AuthnContextClassRef values that count as a second factor, exactly. `allowIdpInitiated`: unsolicited responses accepted (each assertion once). `disabled`: its sign-ins refused and every browser session it started ended.',
  })
  @ApiJsonBody(UpdateSamlConnectionRequestSchema)
  @ApiJsonResponse(200, 'The connection as it is now.', SamlConnectionSchema)
  @ApiErrors([400, 'Invalid body.'], [401, 'No valid credential.'], [403, 'Your role may not.'], [404, 'No such organization of yours, or no connection.'])
  update(@Actor() actor: OrgActor, @ValidBody(UpdateSamlConnectionRequestSchema) body: UpdateSamlConnectionRequest): Promise<SamlConnection> {
    return this.connections.update(actor, body);
  }

  @Delete()
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove the connection: the browser sessions it started end and its links go; the accounts stay (admins).' })
  @ApiErrors([401, 'No valid credential.'], [403, 'Your role may not.'], [404, 'No such organization of yours, or no connection.'])
  async remove(@Actor() actor: OrgActor): Promise<void> {
    await this.connections.remove(actor);
  }
}
