import { Controller, Delete, Get, Header, HttpCode, Param, ParseUUIDPipe, Patch, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type AddedServiceAccountKey,
  AddedServiceAccountKeySchema,
  type AddServiceAccountKeyRequest,
  AddServiceAccountKeyRequestSchema,
  type CreatedServiceAccount,
  CreatedServiceAccountSchema,
  type CreatedServiceAccountSecret,
  CreatedServiceAccountSecretSchema,
  type CreateServiceAccountFederationRequest,
  CreateServiceAccountFederationRequestSchema,
  type CreateServiceAccountRequest,
  CreateServiceAccountRequestSchema,
  type CreateServiceAccountSecretRequest,
  CreateServiceAccountSecretRequestSchema,
  type ServiceAccount,
  type ServiceAccountFederation,
  ServiceAccountFederationSchema,
  ServiceAccountSchema,
  type UpdateServiceAccountRequest,
  UpdateServiceAccountRequestSchema,
} from '@prospect/contract';
import * as z from 'zod/mini';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import { Actor, OrgMembershipGuard, RequireOrgRole } from '../organizations/org-membership.guard.js';
import type { OrgActor } from '../organizations/organizations.service.js';
import { ServiceAccountsService } from './service-accounts.service.js';

const uuid = new ParseUUIDPipe();

/**
 * An organization's service accounts (issue #45), for its admins and owners: a bearer token with
 * `orgs`, or a signed-in browser with its CSRF token. A service account's own token is refused
 * here by the bearer guard (no @AllowServiceAccount): a machine never manages machines.
 */
@ApiTags('service accounts')
@ApiBearerAuth()
@Controller('api/orgs/:slug/service-accounts')
@RequireScope('orgs')
@AllowWebSession()
@UseGuards(OrgMembershipGuard)
export class ServiceAccountsController {
  constructor(private readonly accounts: ServiceAccountsService) {}

  @Post()
  @HttpCode(201)
  @RequireOrgRole('admin', 'create service accounts')
  @ApiOperation({ summary: 'Create a service account: a machine identity of the organization with its scopes (`profile`, `orgs`). Add a secret or a key next.' })
  @ApiJsonBody(CreateServiceAccountRequestSchema)
  @ApiJsonResponse(201, 'Created.', CreatedServiceAccountSchema)
  @ApiErrors([400, 'Invalid body (a scope a service account may not hold).'], [403, 'Your role may not.'], [404, 'No such organization of yours.'])
  create(@Actor() actor: OrgActor, @ValidBody(CreateServiceAccountRequestSchema) body: CreateServiceAccountRequest): Promise<CreatedServiceAccount> {
    return this.accounts.create(actor, body);
  }

  @Get()
  @Header('Cache-Control', 'no-store')
  @RequireOrgRole('admin', 'see its service accounts')
  @ApiOperation({ summary: 'The organization’s service accounts, with their secrets and keys (never a secret itself) and their last use.' })
  @ApiJsonResponse(200, 'By name.', z.array(ServiceAccountSchema))
  @ApiErrors([403, 'Your role may not.'], [404, 'No such organization of yours.'])
  list(@Actor() actor: OrgActor): Promise<ServiceAccount[]> {
    return this.accounts.list(actor);
  }

  @Get(':id')
  @Header('Cache-Control', 'no-store')
  @RequireOrgRole('admin', 'see its service accounts')
  @ApiOperation({ summary: 'One service account.' })
  @ApiJsonResponse(200, 'The account.', ServiceAccountSchema)
  @ApiErrors([403, 'Your role may not.'], [404, 'No such service account.'])
  get(@Actor() actor: OrgActor, @Param('id', uuid) id: string): Promise<ServiceAccount> {
    return this.accounts.get(actor, id);
  }

  @Patch(':id')
  @RequireOrgRole('admin', 'change service accounts')
  @ApiOperation({ summary: 'Rename, change its scopes, disable or enable. Disabling it or taking a scope away ends its tokens at once.' })
  @ApiJsonBody(UpdateServiceAccountRequestSchema)
  @ApiJsonResponse(200, 'As it is now.', ServiceAccountSchema)
  @ApiErrors([400, 'Invalid body.'], [403, 'Your role may not.'], [404, 'No such service account.'])
  update(@Actor() actor: OrgActor, @Param('id', uuid) id: string, @ValidBody(UpdateServiceAccountRequestSchema) body: UpdateServiceAccountRequest): Promise<ServiceAccount> {
    return this.accounts.update(actor, id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequireOrgRole('admin', 'delete service accounts')
  @ApiOperation({ summary: 'Delete a service account, its credentials and its tokens.' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such service account.'])
  async delete(@Actor() actor: OrgActor, @Param('id', uuid) id: string): Promise<void> {
    await this.accounts.delete(actor, id);
  }

  @Post(':id/secrets')
  @HttpCode(201)
  @Header('Cache-Control', 'no-store')
  @RequireOrgRole('admin', 'create secrets of service accounts')
  @ApiOperation({ summary: 'A new client secret, shown this once (only its hash is kept); several may be active at once, for rotation.' })
  @ApiJsonBody(CreateServiceAccountSecretRequestSchema, false)
  @ApiJsonResponse(201, 'The secret.', CreatedServiceAccountSecretSchema)
  @ApiErrors([400, 'Invalid body.'], [403, 'Your role may not.'], [404, 'No such service account.'])
  createSecret(
    @Actor() actor: OrgActor,
    @Param('id', uuid) id: string,
    @ValidBody(CreateServiceAccountSecretRequestSchema) body: CreateServiceAccountSecretRequest,
  ): Promise<CreatedServiceAccountSecret> {
    return this.accounts.createSecret(actor, id, body.expiresInDays);
  }

  @Delete(':id/secrets/:secretId')
  @HttpCode(204)
  @RequireOrgRole('admin', 'delete secrets of service accounts')
  @ApiOperation({ summary: 'Delete a secret: it authenticates nothing more, and the account’s tokens end.' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such secret.'])
  async deleteSecret(@Actor() actor: OrgActor, @Param('id', uuid) id: string, @Param('secretId', uuid) secretId: string): Promise<void> {
    await this.accounts.deleteSecret(actor, id, secretId);
  }

  @Post(':id/keys')
  @HttpCode(201)
  @RequireOrgRole('admin', 'add keys to service accounts')
  @ApiOperation({ summary: 'Register a public JWK for private_key_jwt (RFC 7523): RSA (RS256, PS256), EC P-256 (ES256) or Ed25519 (EdDSA).' })
  @ApiJsonBody(AddServiceAccountKeyRequestSchema)
  @ApiJsonResponse(201, 'Registered, with its kid (its own, or its RFC 7638 thumbprint).', AddedServiceAccountKeySchema)
  @ApiErrors([400, 'Not a public key of a supported type.'], [403, 'Your role may not.'], [404, 'No such service account.'], [409, 'A key with that kid is registered already.'])
  addKey(@Actor() actor: OrgActor, @Param('id', uuid) id: string, @ValidBody(AddServiceAccountKeyRequestSchema) body: AddServiceAccountKeyRequest): Promise<AddedServiceAccountKey> {
    return this.accounts.addKey(actor, id, body.jwk);
  }

  @Delete(':id/keys/:keyId')
  @HttpCode(204)
  @RequireOrgRole('admin', 'delete keys of service accounts')
  @ApiOperation({ summary: 'Delete a key: assertions it signs are refused, and the account’s tokens end.' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such key.'])
  async deleteKey(@Actor() actor: OrgActor, @Param('id', uuid) id: string, @Param('keyId', uuid) keyId: string): Promise<void> {
    await this.accounts.deleteKey(actor, id, keyId);
  }

  @Post(':id/federations')
  @HttpCode(201)
  @RequireOrgRole('admin', 'trust issuers for service accounts')
  @ApiOperation({
    summary: 'Trust an external OIDC issuer (a CI’s) for the account: its tokens for `audience` whose claims meet every condition may be exchanged at /oauth/token (RFC 8693).',
    description:
      '`issuer` exact (https://, or http:// on loopback); `audience` one of the token’s `aud` (default: this service’s issuer, its PUBLIC_URL); `conditions`: claim → exact value or pattern where `*` matches any run of characters, `/` included. At least one condition (`sub` or a named claim): a federation never trusts every token of an issuer.',
  })
  @ApiJsonBody(CreateServiceAccountFederationRequestSchema)
  @ApiJsonResponse(201, 'Trusted.', ServiceAccountFederationSchema)
  @ApiErrors([400, 'Invalid body (no condition, an issuer that is not https or is a private address).'], [403, 'Your role may not.'], [404, 'No such service account.'])
  addFederation(
    @Actor() actor: OrgActor,
    @Param('id', uuid) id: string,
    @ValidBody(CreateServiceAccountFederationRequestSchema) body: CreateServiceAccountFederationRequest,
  ): Promise<ServiceAccountFederation> {
    return this.accounts.addFederation(actor, id, body);
  }

  @Get(':id/federations')
  @Header('Cache-Control', 'no-store')
  @RequireOrgRole('admin', 'see its service accounts')
  @ApiOperation({ summary: 'The issuers the account trusts (also in the account’s GET).' })
  @ApiJsonResponse(200, 'Oldest first.', z.array(ServiceAccountFederationSchema))
  @ApiErrors([403, 'Your role may not.'], [404, 'No such service account.'])
  async listFederations(@Actor() actor: OrgActor, @Param('id', uuid) id: string): Promise<ServiceAccountFederation[]> {
    return (await this.accounts.get(actor, id)).federations;
  }

  @Delete(':id/federations/:federationId')
  @HttpCode(204)
  @RequireOrgRole('admin', 'stop trusting issuers for service accounts')
  @ApiOperation({ summary: 'Stop trusting an issuer: its tokens are exchanged no more, and the tokens exchanged through this federation end (not those of a secret, a key or another federation).' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such federation.'])
  async deleteFederation(@Actor() actor: OrgActor, @Param('id', uuid) id: string, @Param('federationId', uuid) federationId: string): Promise<void> {
    await this.accounts.deleteFederation(actor, id, federationId);
  }
}
