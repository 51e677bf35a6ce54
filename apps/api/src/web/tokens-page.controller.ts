import { Controller, Get, Param, ParseUUIDPipe, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiException } from '../common/api-exception.js';
import { Public } from '../common/public.decorator.js';
import { AppConfig } from '../config/app-config.js';
import { type TokenListing, TokensService } from '../tokens/tokens.service.js';
import { field } from './form.js';
import { html, page, sendHtml } from './html.js';
import { type WebSession, WebSessionService } from '../web-sessions/web-session.service.js';

const when = (d: Date | null) => (d ? d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : 'never');

/** Seed §7: issuing a CLI token must be easy from the UI. Lists, creates and revokes them. */
@ApiExcludeController()
@Public()
@Controller('settings/tokens')
export class TokensPageController {
  constructor(
    private readonly sessions: WebSessionService,
    private readonly tokens: TokensService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  async list(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    const session = await this.sessions.resolve(req);
    if (!session) return reply.redirect('/login?next=/settings/tokens', 303);
    await this.render(reply, session, 200);
  }

  @Post()
  async create(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    const session = await this.sessions.resolve(req);
    if (!session) return reply.redirect('/login?next=/settings/tokens', 303);
    if (!this.sessions.checkCsrf(session, field(req, '_csrf'))) return this.render(reply, session, 403, { error: 'This form is out of date. Please try again.' });
    const label = field(req, 'label').trim();
    if (label.length > 100) return this.render(reply, session, 400, { error: 'A label has at most 100 characters.' });
    const issued = await this.tokens.issue({ userId: session.user.id, origin: 'direct', label: label || null, ip: req.ip });
    await this.render(reply, session, 201, { created: issued.accessToken });
  }

  @Post(':id/revoke')
  async revoke(@Req() req: FastifyRequest, @Res() reply: FastifyReply, @Param('id', new ParseUUIDPipe()) id: string) {
    const session = await this.sessions.resolve(req);
    if (!session) return reply.redirect('/login?next=/settings/tokens', 303);
    if (!this.sessions.checkCsrf(session, field(req, '_csrf'))) return this.render(reply, session, 403, { error: 'This form is out of date. Please try again.' });
    try {
      await this.tokens.revokeForUser(session.user.id, id, req.ip);
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() === 404) return this.render(reply, session, 404, { error: 'No such token.' });
      throw err;
    }
    reply.redirect('/settings/tokens', 303);
  }

  private async render(reply: FastifyReply, session: WebSession, status: number, notice: { created?: string; error?: string } = {}) {
    const all = await this.tokens.listForUser(session.user.id);
    const active = all.filter((t) => !t.revokedAt && t.expiresAt.getTime() > Date.now());
    const body = html`<div class="card"><h1>CLI tokens and sessions</h1>
${notice.error ? html`<p class="error" role="alert">${notice.error}</p>` : ''}
${notice.created
  ? html`<div class="success" role="status"><p><strong>Your new token</strong> — copy it now, it will not be shown again.</p>
<label for="new-token">Token</label><input id="new-token" class="token" type="text" readonly value="${notice.created}">
<button type="button" class="secondary" data-copy="new-token" hidden>Copy</button>
<p>Then run, and paste it when asked:</p><p><code class="command">prospect auth:login --api-url ${this.config.publicUrl} --token -</code></p></div>`
  : ''}
<form method="post" action="/settings/tokens">
<input type="hidden" name="_csrf" value="${session.csrfToken}">
<label for="label">Label <span class="muted">(optional, e.g. “CI runner”)</span></label><input id="label" name="label" type="text" maxlength="100">
<button type="submit">Create token</button>
</form>
<h2>Active</h2>
${active.length
  ? html`<table><thead><tr><th>Name</th><th>Origin</th><th>IP</th><th>Created</th><th>Last used</th><th>Expires</th><th></th></tr></thead><tbody>${active.map((t) => this.row(t, session))}</tbody></table>`
  : html`<p class="muted">No active tokens. Sign in with <code>prospect auth:login</code> or create one above.</p>`}
</div><script src="/assets/copy.js" defer></script>`;
    sendHtml(reply, status, page('CLI tokens', body, session));
  }

  private row(t: TokenListing, session: WebSession) {
    const name = t.label ?? ([t.clientName, t.hostname].filter(Boolean).join(' on ') || 'Unnamed token');
    return html`<tr><td data-label="Name"><strong>${name}</strong></td><td data-label="Origin">${t.origin === 'device' ? 'device login' : t.origin === 'admin' ? 'issued by an admin' : 'created here'}</td><td data-label="IP">${t.createdIp ?? ''}</td><td data-label="Created">${when(t.createdAt)}</td><td data-label="Last used">${when(t.lastUsedAt)}</td><td data-label="Expires">${when(t.expiresAt)}</td>
<td><form method="post" action="/settings/tokens/${t.id}/revoke"><input type="hidden" name="_csrf" value="${session.csrfToken}"><button type="submit" class="danger" aria-label="Revoke ${name}">Revoke</button></form></td></tr>`;
  }
}
