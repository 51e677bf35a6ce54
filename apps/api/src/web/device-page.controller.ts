import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { formatUserCode, normalizeUserCode } from '@prospect/contract';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { Public } from '../common/public.decorator.js';
import { DeviceLoginService, UndecidableDeviceLoginError, type UndecidableReason } from '../device-login/device-login.service.js';
import { field, queryParam } from './form.js';
import { html, page, sendHtml } from './html.js';
import { type WebSession, WebSessionService } from '../web-sessions/web-session.service.js';

/** Wrong codes allowed per minute, per signed-in person and per IP, against guessing. */
export const WRONG_CODES_PER_MINUTE = 5;

const UNDECIDABLE: Record<UndecidableReason, [number, string, string]> = {
  unknown: [404, 'Code not found', 'That code does not match any sign-in request. Check the code in your terminal and try again.'],
  expired: [410, 'This code has expired', 'Run `prospect auth:login` again in your terminal to get a new code.'],
  decided: [409, 'This code was already used', 'This sign-in request was already approved or denied. Run `prospect auth:login` again if you still need to sign in.'],
};

/** The verification URL: a signed-in person checks the code and approves or denies the CLI. */
@ApiExcludeController()
@Public()
@Controller('device')
export class DevicePageController {
  constructor(
    private readonly sessions: WebSessionService,
    private readonly deviceLogins: DeviceLoginService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  @Get()
  async show(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    const session = await this.sessions.resolve(req);
    if (!session) return reply.redirect(`/login?next=${encodeURIComponent(req.url)}`, 303);
    const typed = queryParam(req, 'user_code');
    if (!typed) return this.renderCodeForm(reply, session, 200);
    if (await this.tooManyWrongCodes(session, req.ip)) return this.renderTooMany(reply, session);
    try {
      const login = await this.deviceLogins.findForApproval(typed);
      const minutes = Math.max(0, Math.round((this.clock.now().getTime() - login.createdAt.getTime()) / 60_000));
      const body = html`<div class="card"><h1>Sign in the Prospect CLI?</h1>
<p>A terminal is asking to sign in as <strong>${session.user.email}</strong>. Only approve if this code is <strong>exactly</strong> the one shown in <strong>your own</strong> terminal:</p>
<p class="code" aria-label="Code">${login.userCode}</p>
<dl>
<dt>Client</dt><dd>${login.clientName ?? 'unknown'}</dd>
<dt>Computer</dt><dd>${login.hostname ?? 'unknown'}</dd>
<dt>IP address</dt><dd>${login.requestedIp ?? 'unknown'}</dd>
<dt>Started</dt><dd>${minutes === 0 ? 'less than a minute ago' : `${minutes} minute${minutes === 1 ? '' : 's'} ago`}</dd>
</dl>
<p class="muted">If someone sent you this link, or you did not just run <code>prospect auth:login</code>, deny it.</p>
<div class="actions">
<form method="post" action="/device/approve"><input type="hidden" name="_csrf" value="${session.csrfToken}"><input type="hidden" name="user_code" value="${login.userCode}"><button type="submit">Approve</button></form>
<form method="post" action="/device/deny"><input type="hidden" name="_csrf" value="${session.csrfToken}"><input type="hidden" name="user_code" value="${login.userCode}"><button type="submit" class="danger">Deny</button></form>
</div></div>`;
      sendHtml(reply, 200, page('Approve sign-in', body, session));
    } catch (err) {
      if (!(err instanceof UndecidableDeviceLoginError)) throw err;
      if (err.reason === 'unknown') await this.audit.record('web.code_failed', { userId: session.user.id, ip: req.ip });
      this.renderUndecidable(reply, session, err.reason, typed);
    }
  }

  @Post('approve')
  approve(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    return this.decide(req, reply, 'approve');
  }

  @Post('deny')
  deny(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    return this.decide(req, reply, 'deny');
  }

  private async decide(req: FastifyRequest, reply: FastifyReply, decision: 'approve' | 'deny') {
    const session = await this.sessions.resolve(req);
    if (!session) return reply.redirect('/login?next=/device', 303);
    if (!this.sessions.checkCsrf(session, field(req, '_csrf'))) {
      return sendHtml(reply, 403, page('Request refused', html`<div class="card"><h1>Request refused</h1><p class="error">This form is out of date or was not sent from this site. Go back to the <a href="/device">device page</a> and try again.</p></div>`, session));
    }
    const code = field(req, 'user_code');
    try {
      if (decision === 'approve') await this.deviceLogins.approve(code, session.user.id, req.ip);
      else await this.deviceLogins.deny(code, session.user.id, req.ip);
    } catch (err) {
      if (!(err instanceof UndecidableDeviceLoginError)) throw err;
      return this.renderUndecidable(reply, session, err.reason, code);
    }
    const body =
      decision === 'approve'
        ? html`<div class="card"><h1>CLI signed in</h1><p class="success" role="status">You approved the sign-in. You can close this tab and return to your terminal.</p></div>`
        : html`<div class="card"><h1>Sign-in denied</h1><p class="success" role="status">Nothing was signed in. You can close this tab and return to your terminal.</p></div>`;
    sendHtml(reply, 200, page(decision === 'approve' ? 'Approved' : 'Denied', body, session));
  }

  /** Counted in Postgres, so every API instance enforces the same limit. */
  private async tooManyWrongCodes(session: WebSession, ip: string): Promise<boolean> {
    const since = new Date(this.clock.now().getTime() - 60_000);
    const [row] = (await this.db.query(
      `SELECT count(*) FILTER (WHERE user_id = $1)::int AS by_user, count(*) FILTER (WHERE ip = $2)::int AS by_ip
         FROM auth_events WHERE type = 'web.code_failed' AND created_at > $3 AND (user_id = $1 OR ip = $2)`,
      [session.user.id, ip ?? null, since],
    )) as Array<{ by_user: number; by_ip: number }>;
    return row!.by_user >= WRONG_CODES_PER_MINUTE || row!.by_ip >= WRONG_CODES_PER_MINUTE;
  }

  private renderCodeForm(reply: FastifyReply, session: WebSession, status: number, error?: string) {
    const body = html`<div class="card"><h1>Sign in the Prospect CLI</h1>
<p>Enter the code shown in your terminal by <code>prospect auth:login</code>.</p>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="get" action="/device">
<label for="user_code">Code</label><input id="user_code" name="user_code" type="text" autocomplete="off" autocapitalize="characters" spellcheck="false" placeholder="XXXX-XXXX" required maxlength="20">
<button type="submit">Continue</button>
</form></div>`;
    sendHtml(reply, status, page('Enter code', body, session));
  }

  private renderUndecidable(reply: FastifyReply, session: WebSession, reason: UndecidableReason, typed: string) {
    const [status, title, text] = UNDECIDABLE[reason];
    const normalized = normalizeUserCode(typed);
    const body = html`<div class="card"><h1>${title}</h1>
${normalized ? html`<p class="code" aria-label="Code">${formatUserCode(normalized)}</p>` : ''}
<p>${text}</p><p><a href="/device">Enter another code</a></p></div>`;
    sendHtml(reply, status, page(title, body, session));
  }

  private renderTooMany(reply: FastifyReply, session: WebSession) {
    const body = html`<div class="card"><h1>Too many wrong codes</h1><p class="error" role="alert">Please wait a minute before trying another code.</p></div>`;
    sendHtml(reply.header('retry-after', '60'), 429, page('Too many attempts', body, session));
  }
}
