import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, UseGuards, UseInterceptors } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { Public } from '../auth/public.decorator.js';
import { scimNotFound } from './scim-error.js';
import { GROUP_FILTERS, listQuery, USER_FILTERS } from './scim-filter.js';
import { type ScimContext, ScimProvisioningService } from './scim-provisioning.service.js';
import { resourceTypes, schemas, serviceProviderConfig, SCHEMAS } from './scim-resources.js';
import { Scim, ScimLogInterceptor, ScimTokenGuard } from './scim-token.guard.js';

/** Whether a request asked to leave a group's members out (`excludedAttributes=members`: Okta's and Entra's lists of groups). */
const withMembers = (query: Record<string, unknown>) =>
  !String(query.excludedAttributes ?? '')
    .toLowerCase()
    .split(',')
    .map((a) => a.trim())
    .includes('members');

const list = <T>(resources: T[]) => ({ schemas: [SCHEMAS.list], totalResults: resources.length, startIndex: 1, itemsPerPage: resources.length, Resources: resources });

/**
 * SCIM 2.0 (RFC 7643, 7644) for one organization, at `/scim/v2/{slug}/`: what its directory (Okta,
 * Entra ID…) calls to provision people and groups. Nest owns the routes; scim2-parse-filter parses
 * filters and scim-patch applies PATCH operations (ScimProvisioningService). Every answer is
 * `application/scim+json`; every refusal SCIM's error body (common/error-body.filter.ts).
 */
@ApiExcludeController()
@Public()
@UseGuards(ScimTokenGuard)
@UseInterceptors(ScimLogInterceptor)
@Controller('scim/v2/:slug')
export class ScimController {
  constructor(private readonly provisioning: ScimProvisioningService) {}

  @Get('ServiceProviderConfig')
  serviceProviderConfig(@Scim() scim: ScimContext) {
    return serviceProviderConfig(scim.base);
  }

  @Get('ResourceTypes')
  resourceTypes(@Scim() scim: ScimContext) {
    return list(resourceTypes(scim.base));
  }

  @Get('ResourceTypes/:id')
  resourceType(@Scim() scim: ScimContext, @Param('id') id: string) {
    const found = resourceTypes(scim.base).find((t) => t.id === id);
    if (!found) throw scimNotFound('ResourceType', id);
    return found;
  }

  @Get('Schemas')
  schemas(@Scim() scim: ScimContext) {
    return list(schemas(scim.base));
  }

  @Get('Schemas/:id')
  schema(@Scim() scim: ScimContext, @Param('id') id: string) {
    const found = schemas(scim.base).find((s) => s.id === id);
    if (!found) throw scimNotFound('Schema', id);
    return found;
  }

  // Users

  @Post('Users')
  @HttpCode(201)
  createUser(@Scim() scim: ScimContext, @Body() body: unknown) {
    return this.provisioning.createUser(scim, body);
  }

  @Get('Users')
  listUsers(@Scim() scim: ScimContext, @Query() query: Record<string, unknown>) {
    return this.provisioning.listUsers(scim, listQuery(query, USER_FILTERS));
  }

  @Get('Users/:id')
  getUser(@Scim() scim: ScimContext, @Param('id') id: string) {
    return this.provisioning.getUser(scim, id);
  }

  @Put('Users/:id')
  replaceUser(@Scim() scim: ScimContext, @Param('id') id: string, @Body() body: unknown) {
    return this.provisioning.replaceUser(scim, id, body);
  }

  @Patch('Users/:id')
  patchUser(@Scim() scim: ScimContext, @Param('id') id: string, @Body() body: unknown) {
    return this.provisioning.patchUser(scim, id, body);
  }

  @Delete('Users/:id')
  @HttpCode(204)
  async deleteUser(@Scim() scim: ScimContext, @Param('id') id: string): Promise<void> {
    await this.provisioning.deleteUser(scim, id);
  }

  // Groups

  @Post('Groups')
  @HttpCode(201)
  createGroup(@Scim() scim: ScimContext, @Body() body: unknown) {
    return this.provisioning.createGroup(scim, body);
  }

  @Get('Groups')
  listGroups(@Scim() scim: ScimContext, @Query() query: Record<string, unknown>) {
    return this.provisioning.listGroups(scim, listQuery(query, GROUP_FILTERS), withMembers(query));
  }

  @Get('Groups/:id')
  getGroup(@Scim() scim: ScimContext, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    return this.provisioning.getGroup(scim, id, withMembers(query));
  }

  @Put('Groups/:id')
  replaceGroup(@Scim() scim: ScimContext, @Param('id') id: string, @Body() body: unknown) {
    return this.provisioning.replaceGroup(scim, id, body);
  }

  @Patch('Groups/:id')
  patchGroup(@Scim() scim: ScimContext, @Param('id') id: string, @Body() body: unknown) {
    return this.provisioning.patchGroup(scim, id, body);
  }

  @Delete('Groups/:id')
  @HttpCode(204)
  async deleteGroup(@Scim() scim: ScimContext, @Param('id') id: string): Promise<void> {
    await this.provisioning.deleteGroup(scim, id);
  }
}
