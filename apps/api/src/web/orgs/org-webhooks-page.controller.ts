import { Controller, Get, Param, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { CreateWebhookRequestSchema, utcMinute, type WebhookSecretResponse } from '@prospect/contract';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { ApiException } from '../../common/api-exception.js';
import { ORG_PAGE_PREFIX, type OrgActor } from '../../organizations/organizations.service.js';
import { WebhooksService } from '../../webhooks/webhooks.service.js';
import { field, queryParam } from '../form.js';
import { CsrfGuard, PageRefusalFilter, SignedInGuard } from '../page-guards.js';
import { changeThenRedirect, OrgAdminPages, orgPagePath } from './org-admin-pages.js';

const DONE: Record<string, string> = {
  disabled: 'Disabled: nothing is sent to it until it is enabled again.',
  enabled: 'Enabled: the events from now on are sent, and those it had not received yet.',
  removed: 'Deleted, with its delivery log.',
  redelivered: 'Queued again: it is sent after the endpoint’s other pending deliveries.',
};

/** What was typed in the form that adds a webhook. */
type Typed = { url: string; types: string };

/** Deliveries shown per endpoint on the page (the API's log has more). */
const LOG_SHOWN = 10;

/**
 * /orgs/{slug}/webhooks (issue #46): an organization's admins register endpoints (the signing
 * secret shown once, on the answer to the form), rotate secrets, disable, enable and delete them,
 * and read each one's delivery log with Redeliver. The same WebhooksService as the API.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
@Controller(`${ORG_PAGE_PREFIX.slice(1)}/:slug/webhooks`)
export class OrgWebhooksPageController {
  constructor(
    private readonly adminPages: OrgAdminPages,
    private readonly webhooks: WebhooksService,
  ) {}

  @Get()
  async page(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its webhooks');
    if (actor) await this.render(req, res, actor, 200, {});
  }

  @Post()
  @UseGuards(CsrfGuard)
  async create(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its webhooks');
    if (!actor) return;
    // A refused form is shown again with what was typed, as every form of the site.
    const typed = { url: field(req, 'url').trim(), types: field(req, 'types') };
    const input = CreateWebhookRequestSchema.safeParse({ url: typed.url, types: typed.types.split(/[\s,]+/).filter(Boolean) });
    if (!input.success) return this.render(req, res, actor, 400, { error: 'Give an https:// URL, and event types such as user.signed_in separated by commas (or none for every type).', typed });
    await this.withSecret(req, res, actor, () => this.webhooks.create(actor, input.data), 201, typed);
  }

  @Post(':id/rotate-secret')
  @UseGuards(CsrfGuard)
  async rotate(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its webhooks');
    if (actor) await this.withSecret(req, res, actor, () => this.webhooks.rotateSecret(actor, id), 200);
  }

  @Post(':id/disable')
  @UseGuards(CsrfGuard)
  async disable(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its webhooks');
    if (actor) await this.act(req, res, actor, 'disabled', () => this.webhooks.update(actor, id, { disabled: true }));
  }

  @Post(':id/enable')
  @UseGuards(CsrfGuard)
  async enable(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its webhooks');
    if (actor) await this.act(req, res, actor, 'enabled', () => this.webhooks.update(actor, id, { disabled: false }));
  }

  @Post(':id/remove')
  @UseGuards(CsrfGuard)
  async remove(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its webhooks');
    if (actor) await this.act(req, res, actor, 'removed', () => this.webhooks.remove(actor, id));
  }

  @Post(':id/deliveries/:deliveryId/redeliver')
  @UseGuards(CsrfGuard)
  async redeliver(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string, @Param('deliveryId') deliveryId: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its webhooks');
    if (actor) await this.act(req, res, actor, 'redelivered', () => this.webhooks.redeliver(actor, id, deliveryId));
  }


  /** A secret is shown in the answer to the form that made it, and never again (no redirect: nothing keeps it). */
  private async withSecret(req: Request, res: Response, actor: OrgActor, work: () => Promise<WebhookSecretResponse>, status: number, typed?: Typed) {
    try {
      const made = await work();
      await this.render(req, res, actor, status, { secret: { url: made.webhook.url, value: made.secret } });
    } catch (err) {
      if (err instanceof ApiException) return this.render(req, res, actor, err.getStatus(), { error: err.message, typed });
      throw err;
    }
  }

  private act(req: Request, res: Response, actor: OrgActor, done: string, work: () => Promise<unknown>) {
    return changeThenRedirect(res, orgPagePath(actor.organization.slug, `webhooks?done=${done}`), work, (status, error) => this.render(req, res, actor, status, { error }));
  }

  private async render(req: Request, res: Response, actor: OrgActor, status: number, shown: { error?: string; secret?: { url: string; value: string }; typed?: Typed }) {
    const org = actor.organization;
    const endpoints = await this.webhooks.list(actor);
    const withLogs = await Promise.all(
      endpoints.map(async (endpoint) => ({
        ...endpoint,
        createdAt: utcMinute(endpoint.createdAt),
        typesText: endpoint.types.length ? endpoint.types.join(', ') : 'every event type',
        previousSecretValidUntil: endpoint.previousSecretValidUntil ? utcMinute(endpoint.previousSecretValidUntil) : null,
        deliveries: (await this.webhooks.deliveryLog(actor, endpoint.id)).slice(0, LOG_SHOWN).map((d) => ({
          ...d,
          createdAt: utcMinute(d.createdAt),
          nextAttemptAt: d.nextAttemptAt ? utcMinute(d.nextAttemptAt) : null,
          redeliverable: d.state !== 'pending',
        })),
      })),
    );
    res.status(status).render('org-webhooks', {
      title: `Webhooks of ${org.name}`,
      ...this.adminPages.frame(req, org, 'webhooks'),
      endpoints: withLogs,
      secret: shown.secret,
      done: shown.error || shown.secret ? undefined : DONE[queryParam(req, 'done')],
      error: shown.error,
      typed: shown.typed,
    });
  }
}
