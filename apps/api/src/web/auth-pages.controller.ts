import { Controller, Get, Header, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AuditService } from '../audit/audit.service.js';
import { ApiException } from '../common/api-exception.js';
import { Public } from '../common/public.decorator.js';
import { AppConfig } from '../config/app-config.js';
import { MIN_PASSWORD_LENGTH, UsersService } from '../users/users.service.js';
import { COPY_SCRIPT, STYLESHEET } from './assets.js';
import { field, queryParam, safeNext } from './form.js';
import { html, page, sendHtml } from './html.js';
import { WebSessionService } from '../web-sessions/web-session.service.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Sign-up, sign-in and sign-out: the web identity the CLI's approvals rest on. */
@ApiExcludeController()
@Public()
@Controller()
export class AuthPagesController {
  constructor(
    private readonly sessions: WebSessionService,
    private readonly users: UsersService,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
  ) {}

  @Get('assets/style.css')
  @Header('content-type', 'text/css; charset=utf-8')
  @Header('cache-control', 'public, max-age=3600')
  stylesheet() {
    return STYLESHEET;
  }

  @Get('assets/copy.js')
  @Header('content-type', 'text/javascript; charset=utf-8')
  @Header('cache-control', 'public, max-age=3600')
  copyScript() {
    return COPY_SCRIPT;
  }

  @Get()
  async home(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    reply.redirect((await this.sessions.resolve(req)) ? '/settings/tokens' : '/login', 303);
  }

  @Get('login')
  async loginPage(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    if (await this.sessions.resolve(req)) return reply.redirect(safeNext(queryParam(req, 'next')), 303);
    this.renderLogin(req, reply, 200);
  }

  @Post('login')
  async login(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    const next = safeNext(field(req, 'next'));
    if (!this.sessions.checkAnonymousCsrf(req, field(req, '_csrf'))) return this.renderLogin(req, reply, 403, 'Your form expired. Please try again.');
    const email = field(req, 'email').trim();
    const user = email && field(req, 'password') ? await this.users.authenticate(email, field(req, 'password')) : null;
    if (!user) {
      await this.audit.record('web.login_failed', { ip: req.ip, detail: { reason: 'bad credentials' } });
      return this.renderLogin(req, reply, 401, 'That e-mail and password do not match an account.', email);
    }
    await this.sessions.create(user.id, reply);
    await this.audit.record('web.login', { userId: user.id, ip: req.ip });
    reply.redirect(next, 303);
  }

  @Get('signup')
  async signupPage(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    if (await this.sessions.resolve(req)) return reply.redirect(safeNext(queryParam(req, 'next')), 303);
    this.renderSignup(req, reply, this.config.allowSignup ? 200 : 403);
  }

  @Post('signup')
  async signup(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    if (!this.config.allowSignup) return this.renderSignup(req, reply, 403);
    const values = { name: field(req, 'name').trim(), email: field(req, 'email').trim() };
    const fail = (status: number, message: string) => this.renderSignup(req, reply, status, message, values);
    if (!this.sessions.checkAnonymousCsrf(req, field(req, '_csrf'))) return fail(403, 'Your form expired. Please try again.');
    if (!values.name || values.name.length > 100) return fail(400, 'Please enter your name (at most 100 characters).');
    if (!EMAIL.test(values.email) || values.email.length > 320) return fail(400, 'Please enter a valid e-mail address.');
    const password = field(req, 'password');
    if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) return fail(400, `Your password needs at least ${MIN_PASSWORD_LENGTH} characters.`);
    try {
      const user = await this.users.create({ ...values, password });
      await this.sessions.create(user.id, reply);
      await this.audit.record('web.signup', { userId: user.id, ip: req.ip });
      reply.redirect(safeNext(field(req, 'next')), 303);
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() === 409) return fail(409, 'An account with this e-mail address already exists. Sign in instead.');
      throw err;
    }
  }

  @Post('logout')
  async logout(@Req() req: FastifyRequest, @Res() reply: FastifyReply) {
    const session = await this.sessions.resolve(req);
    if (session && this.sessions.checkCsrf(session, field(req, '_csrf'))) {
      await this.sessions.destroy(req, reply);
      await this.audit.record('web.logout', { userId: session.user.id, ip: req.ip });
    }
    reply.redirect('/login', 303);
  }

  private renderLogin(req: FastifyRequest, reply: FastifyReply, status: number, error?: string, email = '') {
    const next = safeNext(field(req, 'next') || queryParam(req, 'next'));
    const csrf = this.sessions.anonymousCsrf(req, reply);
    const body = html`<div class="card"><h1>Sign in to Prospect</h1>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="/login">
<input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="next" value="${next}">
<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="username" required value="${email}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
${this.config.allowSignup ? html`<p class="muted">No account yet? <a href="/signup?next=${encodeURIComponent(next)}">Create one</a>.</p>` : ''}</div>`;
    sendHtml(reply, status, page('Sign in', body));
  }

  private renderSignup(req: FastifyRequest, reply: FastifyReply, status: number, error?: string, values = { name: '', email: '' }) {
    if (!this.config.allowSignup) {
      const body = html`<div class="card"><h1>Sign-up is closed</h1><p>Ask an administrator for an account, then <a href="/login">sign in</a>.</p></div>`;
      return sendHtml(reply, 403, page('Sign-up is closed', body));
    }
    const next = safeNext(field(req, 'next') || queryParam(req, 'next'));
    const csrf = this.sessions.anonymousCsrf(req, reply);
    const body = html`<div class="card"><h1>Create your Prospect account</h1>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="/signup">
<input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="next" value="${next}">
<label for="name">Name</label><input id="name" name="name" type="text" autocomplete="name" required maxlength="100" value="${values.name}">
<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="username" required value="${values.email}">
<label for="password">Password <span class="muted">(at least ${MIN_PASSWORD_LENGTH} characters)</span></label><input id="password" name="password" type="password" autocomplete="new-password" required minlength="${MIN_PASSWORD_LENGTH}">
<button type="submit">Create account</button>
</form>
<p class="muted">Already have an account? <a href="/login?next=${encodeURIComponent(next)}">Sign in</a>.</p></div>`;
    sendHtml(reply, status, page('Create account', body));
  }
}
