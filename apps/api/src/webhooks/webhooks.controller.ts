import { Controller, Delete, Get, Header, HttpCode, Param, Patch, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  type CreateWebhookRequest,
  CreateWebhookRequestSchema,
  type UpdateWebhookRequest,
  UpdateWebhookRequestSchema,
  type Webhook,
  type WebhookDelivery,
  WebhookDeliverySchema,
  WebhookSchema,
  type WebhookSecretResponse,
  WebhookSecretResponseSchema,
} from '@prospect/contract';
import * as z from 'zod/mini';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { ValidBody } from '../common/valid-body.js';
import { Actor, OrgMembershipGuard, RequireOrgRole } from '../organizations/org-membership.guard.js';
import type { OrgActor } from '../organizations/organizations.service.js';
import { WebhooksService } from './webhooks.service.js';

/**
 * An organization's signed webhooks (issue #46 item 3, docs/webhooks.md), for its admins: a bearer
 * token with `orgs`, or a signed-in browser with its CSRF token.
 */
@ApiTags('webhooks')
@ApiBearerAuth()
@Controller('api/orgs/:slug/webhooks')
@RequireScope('orgs')
@AllowWebSession()
@UseGuards(OrgMembershipGuard)
export class WebhooksController {
  constructor(private readonly webhooks: WebhooksService) {}

  @Post()
  @HttpCode(201)
  @Header('Cache-Control', 'no-store')
  @RequireOrgRole('admin', 'add webhooks')
  @ApiOperation({ summary: 'Register an endpoint: it receives the organization’s events from now on, signed with the secret answered here once.' })
  @ApiJsonBody(CreateWebhookRequestSchema)
  @ApiJsonResponse(201, 'Registered; `secret` is shown this once.', WebhookSecretResponseSchema)
  @ApiErrors([400, 'Invalid body, or a URL the rules refuse (not https, a private or loopback address).'], [403, 'Your role may not.'], [404, 'No such organization of yours.'], [409, 'Too many webhooks.'])
  create(@Actor() actor: OrgActor, @ValidBody(CreateWebhookRequestSchema) body: CreateWebhookRequest): Promise<WebhookSecretResponse> {
    return this.webhooks.create(actor, body);
  }

  @Get()
  @Header('Cache-Control', 'no-store')
  @RequireOrgRole('admin', 'see webhooks')
  @ApiOperation({ summary: 'Its endpoints (never their secrets).' })
  @ApiJsonResponse(200, 'Oldest first.', z.array(WebhookSchema))
  @ApiErrors([403, 'Your role may not.'], [404, 'No such organization of yours.'])
  list(@Actor() actor: OrgActor): Promise<Webhook[]> {
    return this.webhooks.list(actor);
  }

  @Get(':id')
  @Header('Cache-Control', 'no-store')
  @RequireOrgRole('admin', 'see webhooks')
  @ApiOperation({ summary: 'One endpoint.' })
  @ApiJsonResponse(200, 'The endpoint.', WebhookSchema)
  @ApiErrors([403, 'Your role may not.'], [404, 'No such webhook.'])
  get(@Actor() actor: OrgActor, @Param('id') id: string): Promise<Webhook> {
    return this.webhooks.get(actor, id);
  }

  @Patch(':id')
  @RequireOrgRole('admin', 'change webhooks')
  @ApiOperation({ summary: 'A new URL or types, or disabled/enabled (enabled again: the events from then on, and its undelivered ones).' })
  @ApiJsonBody(UpdateWebhookRequestSchema)
  @ApiJsonResponse(200, 'As it is now.', WebhookSchema)
  @ApiErrors([400, 'Invalid body or URL.'], [403, 'Your role may not.'], [404, 'No such webhook.'])
  update(@Actor() actor: OrgActor, @Param('id') id: string, @ValidBody(UpdateWebhookRequestSchema) body: UpdateWebhookRequest): Promise<Webhook> {
    return this.webhooks.update(actor, id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @RequireOrgRole('admin', 'delete webhooks')
  @ApiOperation({ summary: 'Delete the endpoint and its delivery log.' })
  @ApiErrors([403, 'Your role may not.'], [404, 'No such webhook.'])
  async remove(@Actor() actor: OrgActor, @Param('id') id: string): Promise<void> {
    await this.webhooks.remove(actor, id);
  }

  @Post(':id/rotate-secret')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @RequireOrgRole('admin', 'rotate webhook secrets')
  @ApiOperation({ summary: 'A new signing secret, shown once; the one before it keeps signing too for 24 hours (two `v1,` signatures).' })
  @ApiJsonResponse(200, 'The new secret.', WebhookSecretResponseSchema)
  @ApiErrors([403, 'Your role may not.'], [404, 'No such webhook.'])
  rotate(@Actor() actor: OrgActor, @Param('id') id: string): Promise<WebhookSecretResponse> {
    return this.webhooks.rotateSecret(actor, id);
  }

  @Get(':id/deliveries')
  @Header('Cache-Control', 'no-store')
  @RequireOrgRole('admin', 'see webhook deliveries')
  @ApiOperation({ summary: 'The delivery log: the latest deliveries, newest first.' })
  @ApiJsonResponse(200, 'Newest first.', z.array(WebhookDeliverySchema))
  @ApiErrors([403, 'Your role may not.'], [404, 'No such webhook.'])
  deliveries(@Actor() actor: OrgActor, @Param('id') id: string): Promise<WebhookDelivery[]> {
    return this.webhooks.deliveryLog(actor, id);
  }

  @Post(':id/deliveries/:deliveryId/redeliver')
  @HttpCode(202)
  @RequireOrgRole('admin', 'redeliver webhook events')
  @ApiOperation({ summary: 'Send the delivery’s event again (the same `webhook-id` and body), after the endpoint’s other pending ones.' })
  @ApiJsonResponse(202, 'Queued.', WebhookDeliverySchema)
  @ApiErrors([403, 'Your role may not.'], [404, 'No such delivery.'])
  redeliver(@Actor() actor: OrgActor, @Param('id') id: string, @Param('deliveryId') deliveryId: string): Promise<WebhookDelivery> {
    return this.webhooks.redeliver(actor, id, deliveryId);
  }
}
