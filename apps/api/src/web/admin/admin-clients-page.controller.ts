import { Controller, Get, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { ClientIdSchema, OAUTH_ROUTES, utcMinute } from '@prospect/contract';
import type { Request, Response } from 'express';
import { ApiException } from '../../common/api-exception.js';
import { open, seal } from '../../common/sealed.js';
import { Public } from '../../auth/public.decorator.js';
import { AppConfig } from '../../config/app-config.js';
import { OAuthClientsService } from '../../oauth/oauth-clients.service.js';
import { UsersService } from '../../users/users.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { saveSession } from '../../web-sessions/web-account.js';
import { checkNameAndScopes, checkType, checkUrisAndOrigins, type ClientForm, MAX_CLIENT_NAME_LENGTH, readClientForm, scopeChoices } from './client-form.js';
import { queryParam } from '../form.js';
import { accountOf, AdminGuard, CsrfGuard, PageRefusalFilter, SignedInGuard, SudoGuard } from '../page-guards.js';

declare module 'express-session' {
  interface SessionData {
    /** A confidential client's secret just made, sealed under the session id until the next page shows it once. */
    newClientSecret?: { clientId: string; sealed: string };
  }
}

const CLIENT_SECRET = 'new-client-secret';

/** Keeps a new client secret for the page the redirect shows, sealed under the session id (which the database never holds). */
export async function keepClientSecret(req: Request, clientId: string, secret: string): Promise<void> {
  req.session.newClientSecret = { clientId, sealed: seal(req.sessionID, clientId, CLIENT_SECRET, secret).toString('base64url') };
  await saveSession(req);
}

/** The new secret of `clientId`, once: the page that shows it takes it out of the session. */
export function takeClientSecret(req: Request, clientId: string): string | undefined {
  const kept = req.session.newClientSecret;
  if (!kept || kept.clientId !== clientId) return undefined;
  delete req.session.newClientSecret;
  return open<string>(req.sessionID, clientId, CLIENT_SECRET, Buffer.from(kept.sealed, 'base64url')) ?? undefined;
}

/** Admins list the OAuth clients and register new ones, public or confidential (the approval and consent pages show their names). */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard, AdminGuard)
@UseFilters(PageRefusalFilter)
@Controller('admin/clients')
export class AdminClientsPageController {
  constructor(
    private readonly clients: OAuthClientsService,
    private readonly users: UsersService,
    private readonly csrf: CsrfService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  async list(@Req() req: Request, @Res() res: Response) {
    const registered = queryParam(req, 'registered');
    res.render('admin-clients', await this.page(req, { registered, clientSecret: registered ? takeClientSecret(req, registered) : undefined }));
  }

  /** Registers a client, then redirects (a reload registers nothing); the next page confirms it. */
  @Post()
  @UseGuards(CsrfGuard, SudoGuard)
  async register(@Req() req: Request, @Res() res: Response) {
    const typed = readClientForm(req);
    const refuse = async (status: number, error: string) => res.status(status).render('admin-clients', await this.page(req, { error, typed }));
    const id = ClientIdSchema.safeParse(typed.id);
    if (!id.success) return refuse(400, `The client id ${id.error.issues[0]?.message ?? 'is not valid'}, the first one a letter or digit.`);
    const checked = checkNameAndScopes(typed);
    if ('error' in checked) return refuse(400, checked.error);
    const type = checkType(typed);
    if (typeof type !== 'string') return refuse(400, type.error);
    const uris = checkUrisAndOrigins(typed, checked.allowedScopes);
    if ('error' in uris) return refuse(400, uris.error);
    let clientSecret: string | undefined;
    try {
      ({ clientSecret } = await this.clients.register({ id: id.data, ...checked, type, ...uris }, req.webUser!.id, req.ip ?? null));
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() === 409) return refuse(409, `A client with the id “${id.data}” already exists. Please choose another id.`);
      if (err instanceof ApiException && err.getStatus() === 400) return refuse(400, err.message);
      throw err;
    }
    if (clientSecret) await keepClientSecret(req, id.data, clientSecret);
    res.redirect(303, `/admin/clients?registered=${encodeURIComponent(id.data)}`);
  }

  /** The page's view model: every client (built-in first), who registered each, and what just happened. */
  private async page(req: Request, notice: { registered?: string; clientSecret?: string; error?: string; typed?: ClientForm } = {}) {
    const all = await this.clients.list();
    const adminIds = [...new Set(all.map((c) => c.createdByUserId).filter((id): id is string => id !== null))];
    const admins = new Map((await Promise.all(adminIds.map((id) => this.users.findById(id)))).flatMap((u) => (u ? [[u.id, u.email] as const] : [])));
    const clients = all.map((c) => ({
      id: c.id,
      name: c.name,
      builtIn: c.builtIn,
      scopes: c.allowedScopes.split(' ').filter(Boolean),
      codeFlow: c.redirectUris.length > 0,
      confidential: c.type === 'confidential',
      disabled: c.disabledAt !== null,
      registeredBy: c.createdByUserId ? (admins.get(c.createdByUserId) ?? 'a deleted account') : undefined,
      registeredAt: utcMinute(c.createdAt),
    }));
    return {
      title: 'OAuth clients',
      wide: true,
      onClients: true,
      account: accountOf(req, this.csrf),
      clients,
      registered: notice.registered ? clients.find((c) => c.id === notice.registered) : undefined,
      clientSecret: notice.clientSecret,
      // After a delete on the client's own page.
      deleted: queryParam(req, 'deleted') || undefined,
      error: notice.error,
      typed: notice.typed,
      maxNameLength: MAX_CLIENT_NAME_LENGTH,
      // A new client may ask for `profile` unless the admin chooses otherwise.
      scopeChoices: scopeChoices(notice.typed?.scopes ?? ['profile']),
      confidential: notice.typed?.type === 'confidential',
      // As the metadata's own endpoints are written: the public URL, then the path.
      metadataUrl: this.config.publicUrl + OAUTH_ROUTES.metadata,
      openidConfigurationUrl: this.config.publicUrl + OAUTH_ROUTES.openidConfiguration,
    };
  }
}
