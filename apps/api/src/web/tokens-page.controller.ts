import { Controller, Get, Param, ParseUUIDPipe, Post, Render, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { ApiException } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { Public } from '../common/public.decorator.js';
import { AppConfig } from '../config/app-config.js';
import { type TokenListing, TokensService } from '../tokens/tokens.service.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import { field } from './form.js';
import { accountOf, CsrfGuard, PageRefusalFilter, SignedInGuard } from './page-guards.js';

const when = (d: Date | null) => (d ? d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : 'never');

const ORIGINS: Record<TokenListing['origin'], string> = { device: 'device login', admin: 'issued by an admin', direct: 'created here' };

/** Seed §7: issuing a CLI token must be easy from the UI. Lists, creates and revokes them. */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
@Controller('settings/tokens')
export class TokensPageController {
  constructor(
    private readonly tokens: TokensService,
    private readonly csrf: CsrfService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  @Get()
  @Render('tokens')
  list(@Req() req: Request) {
    return this.page(req);
  }

  @Post()
  @UseGuards(CsrfGuard)
  async create(@Req() req: Request, @Res() res: Response) {
    const label = field(req, 'label').trim();
    if (label.length > 100) return res.status(400).render('tokens', await this.page(req, { error: 'A label has at most 100 characters.' }));
    const issued = await this.tokens.issue({ userId: req.webUser!.id, origin: 'direct', label: label || null, ip: req.ip ?? null });
    res.status(201).render('tokens', await this.page(req, { created: issued.accessToken }));
  }

  @Post(':id/revoke')
  @UseGuards(CsrfGuard)
  async revoke(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    try {
      await this.tokens.revokeForUser(req.webUser!.id, id, req.ip ?? null);
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() === 404) return res.status(404).render('tokens', await this.page(req, { error: 'No such token.' }));
      throw err;
    }
    res.redirect(303, '/settings/tokens');
  }

  /** The page's view model: active tokens, newest first, and what just happened. */
  private async page(req: Request, notice: { created?: string; error?: string } = {}) {
    const now = this.clock.now().getTime();
    const tokens = (await this.tokens.listForUser(req.webUser!.id))
      .filter((t) => !t.revokedAt && t.expiresAt.getTime() > now)
      .map((t) => ({
        id: t.id,
        name: t.label ?? ([t.clientName, t.hostname].filter(Boolean).join(' on ') || 'Unnamed token'),
        origin: ORIGINS[t.origin],
        createdIp: t.createdIp ?? '',
        createdAt: when(t.createdAt),
        lastUsedAt: when(t.lastUsedAt),
        expiresAt: when(t.expiresAt),
      }));
    return { title: 'CLI tokens', account: accountOf(req, this.csrf), tokens, publicUrl: this.config.publicUrl, ...notice };
  }
}
