import { Controller, Delete, Get, HttpCode, Ip, Param, Patch, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type AdminClient,
  AdminClientSchema,
  type ClientSecretResponse,
  ClientSecretResponseSchema,
  type RegisterClientRequest,
  RegisterClientRequestSchema,
  type Scope,
  type UpdateClientRequest,
  UpdateClientRequestSchema,
} from '@prospect/contract';
import * as z from 'zod/mini';
import { type AuthPrincipal, Principal } from '../auth/auth-principal.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { AdminsOnlyGuard } from './admins-only.guard.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import type { OAuthClient } from '../oauth/oauth-client.entity.js';
import { OAuthClientsService } from '../oauth/oauth-clients.service.js';

const toAdminClient = (client: OAuthClient, clientSecret?: string): AdminClient => ({
  id: client.id,
  name: client.name,
  allowedScopes: client.allowedScopes.split(' ').filter(Boolean) as Scope[],
  builtIn: client.builtIn,
  disabled: client.disabledAt !== null,
  createdAt: client.createdAt.toISOString(),
  type: client.type,
  redirectUris: client.redirectUris,
  allowedOrigins: client.allowedOrigins,
  backchannelLogoutUri: client.backchannelLogoutUri ?? null,
  ...(clientSecret ? { clientSecret } : {}),
});


/** The OAuth clients as admins manage them on /admin/clients, as a JSON API (an admin's bearer token). */
@ApiTags('admin')
@ApiBearerAuth()
@Controller('api/admin/clients')
@RequireScope('admin')
@UseGuards(AdminsOnlyGuard)
export class OAuthClientsController {
  constructor(private readonly clients: OAuthClientsService) {}

  @Get()
  @ApiOperation({ summary: 'Every OAuth client, built-in first (admins).' })
  @ApiJsonResponse(200, 'The clients.', z.array(AdminClientSchema))
  @ApiErrors([401, 'No valid bearer token.'], [403, 'The bearer is not an admin, or the token lacks `admin`.'])
  async list(): Promise<AdminClient[]> {
    return (await this.clients.list()).map((client) => toAdminClient(client));
  }

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Register a client with the scopes it may ask for, its redirect URIs and allowed origins (admins).',
    description:
      '`type` is `public` unless said: no secret, PKCE (an extension, a desktop tool). A `confidential` one gets a secret, in this answer only (`clientSecret`); only its SHA-256 is kept. Without `redirectUris` a client has no authorization code flow; with them it may not be allowed `admin` (the code flow never grants it).',
  })
  @ApiJsonBody(RegisterClientRequestSchema)
  @ApiJsonResponse(201, 'Registered; `clientSecret` for a confidential client, shown this once.', AdminClientSchema)
  @ApiErrors([400, 'Invalid body, or `admin` with redirect URIs.'], [401, 'No valid bearer token.'], [403, 'Not an admin.'], [409, 'The id is taken.'])
  async register(@Principal() caller: AuthPrincipal, @ValidBody(RegisterClientRequestSchema) body: RegisterClientRequest, @Ip() ip: string): Promise<AdminClient> {
    const { client, clientSecret } = await this.clients.register(body, caller.user.id, ip);
    return toAdminClient(client, clientSecret);
  }

  @Post(':id/secret')
  @HttpCode(200)
  @ApiOperation({ summary: 'A confidential client’s new secret, in this answer only; the old one stops working at once (admins).' })
  @ApiJsonResponse(200, 'The new secret.', ClientSecretResponseSchema)
  @ApiErrors([400, 'A public client (it has no secret).'], [401, 'No valid bearer token.'], [403, 'Not an admin.'], [404, 'No such client.'])
  async rotateSecret(@Principal() caller: AuthPrincipal, @Param('id') id: string, @Ip() ip: string): Promise<ClientSecretResponse> {
    return { clientSecret: await this.clients.rotateSecret(id, caller.user.id, ip) };
  }

  @Patch(':id')
  @ApiOperation({
    summary: 'Rename a client, change what it may ask for, its redirect URIs or allowed origins, or disable or enable it (admins).',
    description:
      'All the changes of one request happen in one transaction. Disabling refuses its new device logins and authorizations (`invalid_client`), cancels those not redeemed, uses up its codes not exchanged and revokes every live token and refresh family it holds (device and code grants), with every token made with them. The built-in client can be renamed only.',
  })
  @ApiJsonBody(UpdateClientRequestSchema)
  @ApiJsonResponse(200, 'The client as it is now.', AdminClientSchema)
  @ApiErrors([400, 'Invalid body, or a change the built-in client does not take.'], [401, 'No valid bearer token.'], [403, 'Not an admin.'], [404, 'No such client.'])
  async update(
    @Principal() caller: AuthPrincipal,
    @Param('id') id: string,
    @ValidBody(UpdateClientRequestSchema) body: UpdateClientRequest,
    @Ip() ip: string,
  ): Promise<AdminClient> {
    return toAdminClient((await this.clients.change(id, body, caller.user.id, ip)).client);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a client: its tokens (and the tokens made with them) revoked, its device logins and itself removed (admins). The built-in client cannot be.' })
  @ApiErrors([400, 'The built-in client.'], [401, 'No valid bearer token.'], [403, 'Not an admin.'], [404, 'No such client.'])
  async remove(@Principal() caller: AuthPrincipal, @Param('id') id: string, @Ip() ip: string): Promise<void> {
    await this.clients.remove(id, caller.user.id, ip);
  }
}
