import { Controller, Delete, Get, Header, HttpCode, Param, ParseUUIDPipe, Patch, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type CreatedScimToken,
  CreatedScimTokenSchema,
  type CreateScimTokenRequest,
  CreateScimTokenRequestSchema,
  type ScimRequestLogEntry,
  ScimRequestLogEntrySchema,
  type ScimSettings,
  ScimSettingsSchema,
  type ScimToken,
  ScimTokenSchema,
  type UpdateScimSettingsRequest,
  UpdateScimSettingsRequestSchema,
} from '@prospect/contract';
import * as z from 'zod/mini';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import { Actor, OrgMembershipGuard, RequireOrgRole } from '../organizations/org-membership.guard.js';
import type { OrgActor } from '../organizations/organizations.service.js';
import { ScimAdminService } from './scim-admin.service.js';

const uuid = new ParseUUIDPipe();
const WHAT = 'manage SCIM provisioning';

/** An organization's SCIM provisioning, for its admins and owners (issue #47): tokens, settings, the provisioning log. */
@ApiTags('organizations')
@ApiBearerAuth()
@Controller('api/orgs/:slug')
@RequireScope('orgs')
@AllowWebSession()
@UseGuards(OrgMembershipGuard)
@RequireOrgRole('admin', WHAT)
export class ScimAdminController {
  constructor(private readonly admin: ScimAdminService) {}

  @Post('scim-tokens')
  @HttpCode(201)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'A new SCIM token for the organization’s directory: shown in this answer only.' })
  @ApiJsonBody(CreateScimTokenRequestSchema)
  @ApiJsonResponse(201, 'The token, this once.', CreatedScimTokenSchema)
  @ApiErrors([400, 'Invalid body.'], [403, 'Your role may not.'], [404, 'No such organization of yours.'], [409, 'Too many tokens.'])
  createToken(@Actor() actor: OrgActor, @ValidBody(CreateScimTokenRequestSchema) body: CreateScimTokenRequest): Promise<CreatedScimToken> {
    return this.admin.createToken(actor, body.label);
  }

  @Get('scim-tokens')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'The organization’s SCIM tokens, without their secrets, with their last use.' })
  @ApiJsonResponse(200, 'Newest first.', z.array(ScimTokenSchema))
  @ApiErrors([403, 'Your role may not.'], [404, 'No such organization of yours.'])
  listTokens(@Actor() actor: OrgActor): Promise<ScimToken[]> {
    return this.admin.listTokens(actor);
  }

  @Delete('scim-tokens/:id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke a SCIM token: the directory’s next request with it is refused.' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such token.'])
  async revokeToken(@Actor() actor: OrgActor, @Param('id', uuid) id: string): Promise<void> {
    await this.admin.revokeToken(actor, id);
  }

  @Get('scim')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'The SCIM endpoint, the group→role mapping and deactivateDisablesAccount.' })
  @ApiJsonResponse(200, 'The settings.', ScimSettingsSchema)
  @ApiErrors([403, 'Your role may not.'], [404, 'No such organization of yours.'])
  settings(@Actor() actor: OrgActor): Promise<ScimSettings> {
    return this.admin.getSettings(actor);
  }

  @Patch('scim')
  @ApiOperation({ summary: 'Change deactivateDisablesAccount and/or replace the group→role mapping (applied to every provisioned person at once).' })
  @ApiJsonBody(UpdateScimSettingsRequestSchema)
  @ApiJsonResponse(200, 'As they are now.', ScimSettingsSchema)
  @ApiErrors([400, 'Invalid body.'], [403, 'Your role may not.'], [404, 'No such organization of yours.'], [409, 'A group mapped twice.'])
  update(@Actor() actor: OrgActor, @ValidBody(UpdateScimSettingsRequestSchema) body: UpdateScimSettingsRequest): Promise<ScimSettings> {
    return this.admin.updateSettings(actor, body);
  }

  @Get('scim/log')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'The provisioning log: the directory’s last 50 requests, newest first.' })
  @ApiJsonResponse(200, 'Newest first.', z.array(ScimRequestLogEntrySchema))
  @ApiErrors([403, 'Your role may not.'], [404, 'No such organization of yours.'])
  log(@Actor() actor: OrgActor): Promise<ScimRequestLogEntry[]> {
    return this.admin.log(actor);
  }
}
