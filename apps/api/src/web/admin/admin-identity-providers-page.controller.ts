import { Controller, Get, Param, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { UpdateIdentityProviderRequest } from '@prospect/contract';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { ApiException } from '../../common/api-exception.js';
import { AppConfig } from '../../config/app-config.js';
import { DEFAULT_SCOPES, IdentityProvidersService } from '../../federation/identity-providers.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { field, queryParam } from '../form.js';
import { createRequestOf, presetOptions, problemOf, type ProviderForm, providerRow, readProviderForm, updateRequestOf } from '../identity-provider-form.js';
import { accountOf, AdminGuard, CsrfGuard, PageRefusalFilter, SignedInGuard, SudoGuard } from '../page-guards.js';

const DONE: Record<string, string> = {
  updated: 'Saved.',
  disabled: 'Disabled: its sign-ins are refused, and every browser session it started has ended.',
  enabled: 'Enabled: people can sign in with it again.',
};

/**
 * /admin/identity-providers: admins configure the OpenID providers people sign in through
 * (issue #34), see the redirect URI each needs registered, enforce, disable or delete them. The
 * same service as the JSON API; every change in sudo mode.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard, AdminGuard)
@UseFilters(PageRefusalFilter)
@Controller('admin/identity-providers')
export class AdminIdentityProvidersPageController {
  constructor(
    private readonly providers: IdentityProvidersService,
    private readonly csrf: CsrfService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  async list(@Req() req: Request, @Res() res: Response) {
    await this.render(req, res, 200, {});
  }

  @Post()
  @UseGuards(CsrfGuard, SudoGuard)
  async create(@Req() req: Request, @Res() res: Response) {
    const typed = readProviderForm(req, true);
    const input = createRequestOf(req, typed);
    if (!input.success) return this.render(req, res, 400, { error: problemOf(input.error), typed });
    try {
      await this.providers.create(input.data, req.webUser!.id, req.ip ?? null);
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() < 500) return this.render(req, res, err.getStatus(), { error: err.message, typed });
      throw err;
    }
    res.redirect(303, `/admin/identity-providers?created=${encodeURIComponent(input.data.id)}`);
  }

  /** The edit form of one provider: its settings, and a new client secret if one is typed. */
  @Post(':id')
  @UseGuards(CsrfGuard, SudoGuard)
  update(@Req() req: Request, @Res() res: Response, @Param('id') id: string) {
    const input = updateRequestOf(req, true);
    if (!input.success) return this.render(req, res, 400, { error: problemOf(input.error) });
    return this.act(req, res, id, 'updated', input.data);
  }

  @Post(':id/disable')
  @UseGuards(CsrfGuard, SudoGuard)
  disable(@Req() req: Request, @Res() res: Response, @Param('id') id: string) {
    return this.act(req, res, id, 'disabled', { disabled: true });
  }

  @Post(':id/enable')
  @UseGuards(CsrfGuard, SudoGuard)
  enable(@Req() req: Request, @Res() res: Response, @Param('id') id: string) {
    return this.act(req, res, id, 'enabled', { disabled: false });
  }

  @Post(':id/delete')
  @UseGuards(CsrfGuard, SudoGuard)
  async remove(@Req() req: Request, @Res() res: Response, @Param('id') id: string) {
    if (field(req, 'confirm') !== id) return this.render(req, res, 400, { error: `To delete it, type its id (${id}) in the box beside the button.` });
    try {
      await this.providers.remove(id, req.webUser!.id, req.ip ?? null);
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() < 500) return this.render(req, res, err.getStatus(), { error: err.message });
      throw err;
    }
    res.redirect(303, `/admin/identity-providers?deleted=${encodeURIComponent(id)}`);
  }

  private async act(req: Request, res: Response, id: string, done: string, changes: UpdateIdentityProviderRequest) {
    try {
      await this.providers.update(id, changes, req.webUser!.id, req.ip ?? null);
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() < 500) return this.render(req, res, err.getStatus(), { error: err.message });
      throw err;
    }
    res.redirect(303, `/admin/identity-providers?done=${done}#${encodeURIComponent(id)}`);
  }

  private async render(req: Request, res: Response, status: number, notice: { error?: string; typed?: ProviderForm }) {
    const all = await this.providers.list();
    const created = queryParam(req, 'created');
    res.status(status).render('admin-identity-providers', {
      title: 'Identity providers',
      wide: true,
      account: accountOf(req, this.csrf),
      providers: all.map(providerRow),
      created: created ? all.find((p) => p.id === created) : undefined,
      deleted: queryParam(req, 'deleted') || undefined,
      done: DONE[queryParam(req, 'done')],
      typed: notice.typed ?? { preset: 'generic' },
      defaultScopes: DEFAULT_SCOPES.join(' '),
      presets: presetOptions(notice.typed),
      callbackPattern: `${this.config.publicUrl}/login/sso/{id}/callback`,
      error: notice.error,
    });
  }
}
