import { Controller, Get, Param, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { utcMinute } from '@prospect/contract';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { ApiException } from '../../common/api-exception.js';
import type { OAuthClient } from '../../oauth/oauth-client.entity.js';
import { OAuthClientsService } from '../../oauth/oauth-clients.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { keepClientSecret, takeClientSecret } from './admin-clients-page.controller.js';
import { checkNameAndScopes, checkUrisAndOrigins, type ClientForm, MAX_CLIENT_NAME_LENGTH, readClientForm, scopeChoices } from './client-form.js';
import { queryParam } from '../form.js';
import { accountOf, AdminGuard, CsrfGuard, PageRefusalFilter, SignedInGuard, SudoGuard } from '../page-guards.js';

/** What the page says after a change, by the `done` query parameter of its redirect. */
const DONE: Record<string, string> = {
  saved: 'Saved. New sign-ins ask within these scopes and use these redirect URIs and origins; grants made before keep theirs until the client is disabled.',
  secret: 'A new secret is in place: the old one no longer works.',
  disabled: 'Disabled: it cannot start a sign-in, its waiting sign-ins are cancelled and every token it held is revoked.',
  enabled: 'Enabled: it can start sign-ins again (what was revoked stays revoked).',
};

/**
 * One OAuth client, for admins: rename it, change what it may ask for, disable or enable it,
 * delete it. Every change is a POST with the CSRF token, then a redirect (a reload changes
 * nothing); the same operations as PATCH/DELETE /api/admin/clients/{id}.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard, AdminGuard)
@UseFilters(PageRefusalFilter)
@Controller('admin/clients/:id')
export class AdminClientPageController {
  constructor(
    private readonly clients: OAuthClientsService,
    private readonly csrf: CsrfService,
  ) {}

  @Get()
  async show(@Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    const client = await this.clients.find(id);
    if (!client) return this.notFound(req, res);
    res.render('admin-client', this.page(req, client, { done: DONE[queryParam(req, 'done')], clientSecret: takeClientSecret(req, client.id) }));
  }

  @Post()
  @UseGuards(CsrfGuard, SudoGuard)
  async save(@Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    const client = await this.clients.find(id);
    if (!client) return this.notFound(req, res);
    const typed = readClientForm(req);
    // The built-in client's scopes are not on its form: only its name changes.
    const checked = checkNameAndScopes(client.builtIn ? { ...typed, scopes: client.allowedScopes.split(' ') } : typed);
    if ('error' in checked) return res.status(400).render('admin-client', this.page(req, client, { error: checked.error, typed }));
    const uris = client.builtIn ? undefined : checkUrisAndOrigins(typed, checked.allowedScopes);
    if (uris && 'error' in uris) return res.status(400).render('admin-client', this.page(req, client, { error: uris.error, typed }));
    try {
      await this.clients.change(id, client.builtIn ? { name: checked.name } : { ...checked, ...uris }, req.webUser!.id, req.ip ?? null);
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() === 400) return res.status(400).render('admin-client', this.page(req, client, { error: err.message, typed }));
      throw err;
    }
    res.redirect(303, `/admin/clients/${encodeURIComponent(id)}?done=saved`);
  }

  /** A confidential client's new secret: the old one stops working; the next page shows the new one once. */
  @Post('secret')
  @UseGuards(CsrfGuard, SudoGuard)
  async newSecret(@Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    let secret: string;
    try {
      secret = await this.clients.rotateSecret(id, req.webUser!.id, req.ip ?? null);
    } catch (err) {
      return this.refused(req, res, err);
    }
    await keepClientSecret(req, id, secret);
    res.redirect(303, `/admin/clients/${encodeURIComponent(id)}?done=secret`);
  }

  @Post('disable')
  @UseGuards(CsrfGuard, SudoGuard)
  disable(@Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    return this.change(req, res, id, 'disabled', () => this.clients.change(id, { disabled: true }, req.webUser!.id, req.ip ?? null));
  }

  @Post('enable')
  @UseGuards(CsrfGuard, SudoGuard)
  enable(@Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    return this.change(req, res, id, 'enabled', () => this.clients.change(id, { disabled: false }, req.webUser!.id, req.ip ?? null));
  }

  /** Deleting asks first, without JavaScript: a page with what it ends and the button. */
  @Get('delete')
  async confirmDelete(@Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    const client = await this.clients.find(id);
    if (!client || client.builtIn) return this.notFound(req, res);
    res.render('admin-client-delete', { title: `Delete ${client.name}`, account: accountOf(req, this.csrf), client });
  }

  @Post('delete')
  @UseGuards(CsrfGuard, SudoGuard)
  async delete(@Param('id') id: string, @Req() req: Request, @Res() res: Response) {
    try {
      await this.clients.remove(id, req.webUser!.id, req.ip ?? null);
    } catch (err) {
      return this.refused(req, res, err);
    }
    res.redirect(303, `/admin/clients?deleted=${encodeURIComponent(id)}`);
  }

  private async change(req: Request, res: Response, id: string, done: string, action: () => Promise<unknown>) {
    try {
      await action();
    } catch (err) {
      return this.refused(req, res, err);
    }
    res.redirect(303, `/admin/clients/${encodeURIComponent(id)}?done=${done}`);
  }

  /** The service's refusal (no such client, or the built-in one) as a page. */
  private refused(req: Request, res: Response, err: unknown) {
    if (!(err instanceof ApiException)) throw err;
    if (err.getStatus() === 404) return this.notFound(req, res);
    res.status(err.getStatus()).render('error', { title: 'Not possible', heading: 'Not possible', message: err.message, account: accountOf(req, this.csrf) });
  }

  private notFound(req: Request, res: Response) {
    res.status(404).render('error', { title: 'No such client', heading: 'No such client', message: 'There is no OAuth client with this id (it may have been deleted).', account: accountOf(req, this.csrf) });
  }

  private page(req: Request, client: OAuthClient, notice: { done?: string; error?: string; typed?: ClientForm; clientSecret?: string }) {
    const allowed = client.allowedScopes.split(' ').filter(Boolean);
    return {
      title: client.name,
      wide: true,
      onClients: true,
      account: accountOf(req, this.csrf),
      client: { ...client, disabled: client.disabledAt !== null, disabledSince: client.disabledAt ? utcMinute(client.disabledAt) : undefined, scopes: allowed },
      name: notice.typed?.name ?? client.name,
      scopeChoices: scopeChoices(notice.typed?.scopes ?? allowed),
      redirectUris: notice.typed?.redirectUris ?? client.redirectUris.join('\n'),
      allowedOrigins: notice.typed?.allowedOrigins ?? client.allowedOrigins.join('\n'),
      backchannelLogoutUri: notice.typed?.backchannelLogoutUri ?? client.backchannelLogoutUri ?? '',
      confidential: client.type === 'confidential',
      clientSecret: notice.clientSecret,
      maxNameLength: MAX_CLIENT_NAME_LENGTH,
      done: notice.done,
      error: notice.error,
    };
  }
}
