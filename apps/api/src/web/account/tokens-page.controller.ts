import { Controller, Get, Param, ParseUUIDPipe, Post, Render, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ClientIdSchema, parseScopes } from '@prospect/contract';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { saveSession } from '../../web-sessions/web-account.js';
import { hasUnsafeText, utcMinute } from '@prospect/contract';
import { ApiException } from '../../common/api-exception.js';
import { Clock } from '../../common/clock.js';
import { Public } from '../../auth/public.decorator.js';
import { open, seal } from '../../common/sealed.js';
import { AppConfig } from '../../config/app-config.js';
import { AuthorizationService } from '../../oauth/authorization.service.js';
import { OAuthClientsService } from '../../oauth/oauth-clients.service.js';
import { sessionLabel } from '../../refresh-tokens/refresh-tokens.service.js';
import { siteTokenScope } from '../../tokens/granted-scope.js';
import { minterWords, type TokenListing, TokensService } from '../../tokens/tokens.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { field, queryParam } from '../form.js';
import { scopeLines } from '../scope-words.js';
import { accountOf, CsrfGuard, MayApproveGuard, PageRefusalFilter, SignedInGuard } from '../page-guards.js';

const when = (d: Date | null) => (d ? utcMinute(d) : 'never');

const DAY = 24 * 3600;
const DEFAULT_DAYS = 30;
const NEW_TOKEN = 'new-token';

/** Which grant made a token, in the page's words: a sign-in (a device's, or a connected app's), an administrator, a token or session, or this site. */
function originOf(token: TokenListing, connectedAppTokens: ReadonlySet<string>): string {
  if (connectedAppTokens.has(token.id)) return 'connected app';
  if (token.origin === 'device') return 'device login';
  if (token.origin === 'admin') return 'issued by an admin';
  return token.mintedBy ? `made with ${minterWords(token.mintedBy)}` : 'made on this site';
}

/**
 * Seed §7: issuing a CLI token must be easy from the UI. Lists, creates and revokes them; and the
 * connected apps (issue #33): the clients the person approved in the browser, each revoked here
 * with every session it holds.
 */
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
    private readonly authorization: AuthorizationService,
    private readonly clients: OAuthClientsService,
  ) {}

  @Get()
  @Render('tokens')
  async list(@Req() req: Request) {
    const appRevoked = queryParam(req, 'app_revoked');
    const app = ClientIdSchema.safeParse(appRevoked).success ? await this.clients.find(appRevoked) : null;
    return this.page(req, { created: this.takeNewToken(req), revoked: queryParam(req, 'revoked'), appRevoked: app?.name });
  }

  /** Revokes a connected app: its consent forgotten, every session it holds ended (on every replica), its codes used up. */
  @Post('apps/:clientId/revoke')
  @UseGuards(CsrfGuard)
  async revokeApp(@Req() req: Request, @Res() res: Response, @Param('clientId') clientId: string) {
    const revoked = ClientIdSchema.safeParse(clientId).success && (await this.authorization.revokeConsent(req.webUser!.id, clientId, req.ip ?? null));
    if (!revoked) return res.status(404).render('tokens', await this.page(req, { error: 'No such connected app.' }));
    res.redirect(303, `/settings/tokens?app_revoked=${encodeURIComponent(clientId)}`);
  }

  /** Creates a token, then redirects (a reload never creates a second one); the next page shows it once. */
  @Post()
  @UseGuards(CsrfGuard, MayApproveGuard)
  async create(@Req() req: Request, @Res() res: Response) {
    const label = field(req, 'label').trim();
    if (label.length > 100) return res.status(400).render('tokens', await this.page(req, { error: 'A label has at most 100 characters.' }));
    if (hasUnsafeText(label)) return res.status(400).render('tokens', await this.page(req, { error: 'A label cannot contain control characters, invisible characters or bidirectional text controls.' }));
    const days = Number(field(req, 'expires_in_days') || DEFAULT_DAYS);
    if (!this.lifetimes().includes(days)) return res.status(400).render('tokens', await this.page(req, { error: 'Please choose one of the lifetimes offered.' }));
    const ttlSeconds = Math.min(days * DAY, this.config.accessTokenMaxTtlSeconds);
    // What the person may do; `admin` only when an administrator ticks it (this is sudo mode), and then for ADMIN_GRANT_SECONDS at most.
    const scope = siteTokenScope(req.webUser!.role, field(req, 'admin') === 'on');
    const issued = await this.tokens.issue({ userId: req.webUser!.id, origin: 'direct', label: label || null, ip: req.ip ?? null, userAgent: req.get('user-agent'), ttlSeconds, scope });
    // Kept until the redirect's page shows it, sealed under the session id, which the database never holds.
    req.session.newToken = seal(req.sessionID, req.webUser!.id, NEW_TOKEN, issued.accessToken).toString('base64url');
    await saveSession(req);
    res.redirect(303, '/settings/tokens');
  }

  /** Asks before revoking: a page with what will stop working, and the button that does it. */
  @Get(':id/revoke')
  async confirmRevoke(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    const token = (await this.tokens.listForUser(req.webUser!.id)).find((t) => t.id === id && !t.revokedAt);
    if (!token) return res.status(404).render('tokens', await this.page(req, { error: 'No such token.' }));
    res.render('token-revoke', { title: 'Revoke token', account: accountOf(req, this.csrf), id, name: nameOf(token) });
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
    res.redirect(303, `/settings/tokens?revoked=${id}`);
  }

  /** The lifetimes offered, in days: 30, 90, a year, whatever of them the server allows. */
  private lifetimes(): number[] {
    const maxDays = Math.floor(this.config.accessTokenMaxTtlSeconds / DAY);
    const offered = [30, 90, 365].filter((d) => d <= maxDays);
    // A server allowing less than 30 days: one choice, its maximum (at least a day, capped at issue).
    return offered.length ? offered : [Math.max(1, maxDays)];
  }

  private takeNewToken(req: Request): string | undefined {
    const sealed = req.session.newToken;
    if (!sealed) return undefined;
    delete req.session.newToken;
    return open<string>(req.sessionID, req.webUser!.id, NEW_TOKEN, Buffer.from(sealed, 'base64url')) ?? undefined;
  }

  /** The page's view model: active tokens, newest first, and what just happened. */
  private async page(req: Request, notice: { created?: string; error?: string; revoked?: string; appRevoked?: string } = {}) {
    const now = this.clock.now().getTime();
    const [all, apps] = await Promise.all([this.tokens.listForUser(req.webUser!.id), this.authorization.connectedApps(req.webUser!.id)]);
    const connectedAppTokens = new Set(apps.flatMap((app) => app.accessTokenIds));
    const tokens = all
      .filter((t) => !t.revokedAt && t.expiresAt.getTime() > now)
      .map((t) => ({
        id: t.id,
        name: nameOf(t),
        origin: originOf(t, connectedAppTokens),
        userAgent: t.userAgent ?? '',
        createdIp: t.createdIp ?? '',
        createdAt: when(t.createdAt),
        lastUsedAt: when(t.lastUsedAt),
        expiresAt: when(t.expiresAt),
        // A device login's (or an app's) session: its listed end is the refresh token's, which
        // each renewal moves later; its access tokens are short (the CLI says so too).
        session: t.origin === 'device',
      }));
    const revoked = notice.revoked ? all.find((t) => t.id === notice.revoked && t.revokedAt) : undefined;
    return {
      title: 'CLI tokens',
      wide: true,
      onTokens: true,
      account: accountOf(req, this.csrf),
      tokens,
      hasSessions: tokens.some((t) => t.session),
      accessTokenMinutes: Math.round(this.config.accessTokenTtlSeconds / 60),
      sessionMaxDays: Math.round(this.config.refreshTokenMaxLifetimeSeconds / DAY),
      // An administrator may ask for `admin`; such a token ends within ADMIN_GRANT_SECONDS, whatever lifetime is chosen.
      adminHours: req.webUser!.role === 'admin' ? Math.round((this.config.adminGrantSeconds / 3600) * 10) / 10 : undefined,
      publicUrl: this.config.publicUrl,
      lifetimes: this.lifetimes().map((days, i, all) => ({
        days,
        label: all.length === 1 ? "the server's maximum" : days === 365 ? '1 year' : `${days} days`,
        selected: days === DEFAULT_DAYS,
      })),
      created: notice.created,
      error: notice.error,
      revokedName: revoked ? nameOf(revoked) : undefined,
      connectedApps: apps.map((app) => ({
        clientId: app.clientId,
        name: app.clientName,
        // As the consent page lists them: who you are first.
        scopes: scopeLines(parseScopes(app.scope) ?? [], { isAdmin: req.webUser!.role === 'admin' }),
        since: when(app.createdAt),
        sessions: app.liveGrants === 1 ? '1 active session' : `${app.liveGrants} active sessions`,
      })),
      appRevoked: notice.appRevoked,
    };
  }
}

const nameOf = (t: TokenListing) => t.label ?? sessionLabel(t.clientName, t.hostname) ?? 'Unnamed token';
