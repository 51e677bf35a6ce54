import { Controller, Get, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { hasUnsafeText } from '@prospect/contract';
import { AuditService } from '../../audit/audit.service.js';
import { ApiException } from '../../common/api-exception.js';
import { Public } from '../../auth/public.decorator.js';
import { AppConfig } from '../../config/app-config.js';
import { InvalidSetupCodeError } from '../../users/admin-setup-codes.js';
import { MIN_PASSWORD_LENGTH, normalizeEmail, UsersService } from '../../users/users.service.js';
import { RateLimits, TooManyRequests } from '../../rate-limits/rate-limits.js';
import { TokensService } from '../../tokens/tokens.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { WebSessions } from '../../web-sessions/web-sessions.js';
import { field, queryParam, safeNext, looksLikeEmail, waitText } from '../form.js';
import { CsrfGuard, PageRefusalFilter } from '../page-guards.js';
import { DeviceCookies } from '../device-cookies.js';
import { SignInService } from '../sign-in.service.js';
import { AccountDisabledError } from './local.strategy.js';
import { SignUpService } from '../../accounts/sign-up.service.js';
import { SecondFactorsService } from '../../accounts/second-factors.service.js';
import { Clock } from '../../common/clock.js';
import { VERIFY_LINK_HOURS } from '../../accounts/email-verification.service.js';
import { toWebUser, type WebUser, saveSession, regenerateSession } from '../../web-sessions/web-account.js';
import { FederationPolicy } from '../../federation/federation-policy.js';

/** Sign-up, sign-in and sign-out: the web identity the CLI's approvals rest on. */
@ApiExcludeController()
@Public()
@UseFilters(PageRefusalFilter)
@Controller()
export class AuthPagesController {
  constructor(
    private readonly signIn: SignInService,
    private readonly deviceCookies: DeviceCookies,
    private readonly limits: RateLimits,
    private readonly webSessions: WebSessions,
    private readonly tokens: TokensService,
    private readonly csrf: CsrfService,
    private readonly users: UsersService,
    private readonly signUps: SignUpService,
    private readonly factors: SecondFactorsService,
    private readonly clock: Clock,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    private readonly federation: FederationPolicy,
  ) {}

  @Get()
  home(@Req() req: Request, @Res() res: Response) {
    res.redirect(303, req.webUser ? '/settings/tokens' : '/login');
  }

  @Get('login')
  loginPage(@Req() req: Request, @Res() res: Response) {
    if (req.webUser) return res.redirect(303, safeNext(queryParam(req, 'next'), this.config.publicUrl));
    return this.renderLogin(req, res, 200);
  }

  @Post('login')
  @UseGuards(CsrfGuard)
  async login(@Req() req: Request, @Res() res: Response) {
    const account = normalizeEmail(field(req, 'email'));
    if (account.length > 320) return this.renderLogin(req, res, 400, 'Please enter a valid e-mail address.');
    // A domain a provider enforces signs in there (issue #34): no password is checked, and the
    // browser goes on to the provider (a page that follows a link: the CSP sends forms only to us).
    const provider = await this.federation.enforcingProviderFor(account);
    if (provider) {
      const next = safeNext(field(req, 'next'), this.config.publicUrl);
      const href = `${provider.signInPath}?${new URLSearchParams({ next, login_hint: account }).toString()}`;
      return res.status(200).render('sso-redirect', { layout: false, title: `Continue with ${provider.displayName}`, provider, email: account, href });
    }
    const deviceCookie = await this.deviceCookies.trustedFor(req, account);
    try {
      await this.limits.attemptSignIn(account, req.ip ?? '', deviceCookie);
    } catch (err) {
      if (!(err instanceof TooManyRequests)) throw err;
      res.set('Retry-After', String(err.retryAfterSeconds));
      const wait = `Too many failed sign-ins. Please wait ${waitText(err.retryAfterSeconds)} before trying again`;
      // Only browsers new to the account are blocked: say how its owner gets in now.
      return this.renderLogin(req, res, 429, deviceCookie ? `${wait}.` : `${wait}, sign in from a browser you have signed in with since the account's password or address last changed, or ask an administrator to lift the block.`);
    }
    let user: WebUser | null;
    try {
      user = await this.signIn.checkCredentials(req, res);
    } catch (err) {
      if (!(err instanceof AccountDisabledError)) throw err;
      // The password was right: saying so tells its owner nothing new, and what to do.
      await this.audit.record('web.login_failed', { ip: req.ip, detail: { reason: 'account disabled' } });
      const heading = 'This account is disabled';
      return res.status(403).render('error', { title: heading, heading, message: 'An administrator of this Prospect disabled your account, so it cannot sign in. Ask them to enable it again.' });
    }
    if (!user) {
      // On the account's own security log when the address has one.
      const known = await this.users.findByEmail(account);
      await this.audit.record('web.login_failed', { userId: known?.id ?? null, ip: req.ip, userAgent: req.get('user-agent'), detail: { reason: 'bad credentials', browser: req.get('user-agent')?.slice(0, 200) ?? null } });
      return this.renderLogin(req, res, 401, 'That e-mail and password do not match an account.');
    }
    await this.limits.signInSucceeded(account, req.ip ?? '', deviceCookie);
    const next = safeNext(field(req, 'next'), this.config.publicUrl);
    if (await this.factors.hasAny(user.id)) {
      // Half signed in, in this session only, for a few minutes, under the account's state now:
      // the code comes next. A new session id first, as at the end of a sign-in, so an id planted
      // in this browser before never becomes a half-signed-in one (session fixation).
      await regenerateSession(req);
      req.session.pendingSignIn = { userId: user.id, at: this.clock.now().getTime(), next, credentialEpoch: user.credentialEpoch };
      await saveSession(req);
      return res.redirect(303, '/login/code');
    }
    await this.signIn.complete(req, res, user, null);
    res.redirect(303, next);
  }

  @Get('signup')
  signupPage(@Req() req: Request, @Res() res: Response) {
    if (req.webUser) return res.redirect(303, safeNext(queryParam(req, 'next'), this.config.publicUrl));
    this.renderSignup(req, res, 200);
  }

  @Post('signup')
  async signup(@Req() req: Request, @Res() res: Response) {
    // Closed sign-up says so whatever the form held.
    if (!this.config.allowSignup) return this.renderSignup(req, res, 403);
    if (!this.csrf.isValid(req)) return this.renderSignup(req, res, 403, 'Your form expired. Please try again.');
    const name = field(req, 'name').trim();
    const email = field(req, 'email').trim();
    const password = field(req, 'password');
    if (!name || name.length > 100) return this.renderSignup(req, res, 400, 'Please enter your name (at most 100 characters).');
    // A name and an address are shown in terminals and pages: no control characters (escape sequences, newlines) or bidi controls.
    if (hasUnsafeText(name)) return this.renderSignup(req, res, 400, 'Your name cannot contain control characters, invisible characters or bidirectional text controls.');
    if (!looksLikeEmail(email)) return this.renderSignup(req, res, 400, 'Please enter a valid e-mail address.');
    const provider = await this.federation.enforcingProviderFor(normalizeEmail(email));
    if (provider) return this.renderSignup(req, res, 403, `${normalizeEmail(email)} signs in with ${provider.displayName}: use “Continue with ${provider.displayName}” on the sign-in page.`);
    if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) {
      return this.renderSignup(req, res, 400, `Your password needs at least ${MIN_PASSWORD_LENGTH} characters.`);
    }
    const setupCode = field(req, 'setup_code');
    const next = safeNext(field(req, 'next'), this.config.publicUrl);
    try {
      await this.limits.signUp(req.ip ?? '');
      const outcome = await this.signUps.signUp({ name, email, password }, { next, setupCode: setupCode || undefined, ip: req.ip ?? null });
      if (outcome === 'check-email') {
        return res.status(200).render('signup-check-email', { title: 'Check your e-mail', email: normalizeEmail(email), hours: VERIFY_LINK_HOURS });
      }
      await this.signIn.firstSignIn(req, res, toWebUser(outcome));
      if (setupCode) {
        req.session.notice = 'Your account is ready, and you are the administrator of this Prospect: you can register OAuth clients and manage what others use. The setup code no longer works.';
        await saveSession(req);
      }
      res.redirect(303, next);
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() === 409) {
        return this.renderSignup(req, res, 409, 'An account with this e-mail address already exists. Sign in instead.');
      }
      if (err instanceof TooManyRequests) {
        res.set('Retry-After', String(err.retryAfterSeconds));
        return this.renderSignup(req, res, 429, `Too many new accounts from your address. Please try again in ${waitText(err.retryAfterSeconds)}.`);
      }
      if (err instanceof InvalidSetupCodeError) {
        return this.renderSignup(req, res, 400, 'That setup code is not valid: it works once, only the latest one printed, and only while there is no administrator.');
      }
      throw err;
    }
  }

  @Post('logout')
  @UseGuards(CsrfGuard)
  async logout(@Req() req: Request, @Res() res: Response) {
    const user = req.webUser;
    if (user) {
      await this.signIn.logOut(req);
      await this.audit.record('web.logout', { userId: user.id, ip: req.ip, userAgent: req.get('user-agent') });
    }
    // A page that asks to sign in again (sign-in-again.hbs) sends where to go after it.
    const next = field(req, 'next');
    res.redirect(303, next ? `/login?next=${encodeURIComponent(safeNext(next, this.config.publicUrl))}` : '/login');
  }

  /** Ends every web session of the person (this one too) and, if asked, revokes all their CLI tokens. */
  @Post('logout/everywhere')
  @UseGuards(CsrfGuard)
  async logoutEverywhere(@Req() req: Request, @Res() res: Response) {
    const user = req.webUser;
    if (!user) return res.redirect(303, '/login');
    const revokeTokens = field(req, 'revoke_tokens') === 'on';
    await this.signIn.logOut(req);
    const sessions = await this.webSessions.endAllFor(user.id);
    const tokens = revokeTokens ? await this.tokens.revokeAllForUser(user.id, req.ip ?? null) : 0;
    await this.audit.record('web.logout_everywhere', { userId: user.id, ip: req.ip, detail: { sessions, tokens } });
    res.redirect(303, `/login?signed_out=${revokeTokens ? 'everywhere-and-tokens' : 'everywhere'}`);
  }

  /** The sign-in form, keeping what was typed (never the password) and where to go next, with a button for each enabled identity provider. */
  private async renderLogin(req: Request, res: Response, status: number, error?: string) {
    const next = safeNext(field(req, 'next') || queryParam(req, 'next'), this.config.publicUrl);
    const providers = (await this.federation.enabledProviders()).map((p) => ({ displayName: p.displayName, href: `/login/sso/${p.id}?next=${encodeURIComponent(next)}` }));
    res.status(status).render('login', {
      providers,
      title: 'Sign in',
      error,
      notice: loginNotice(req),
      email: field(req, 'email').trim(),
      next,
      encodedNext: encodeURIComponent(next),
      forDevice: next.startsWith('/device'),
      csrfToken: this.csrf.tokenFor(req),
      allowSignup: this.config.allowSignup,
      passkeys: true,
    });
  }

  private renderSignup(req: Request, res: Response, status: number, error?: string) {
    if (!this.config.allowSignup) return res.status(403).render('signup-closed', { title: 'Sign-up is closed' });
    const next = safeNext(field(req, 'next') || queryParam(req, 'next'), this.config.publicUrl);
    res.status(status).render('signup', {
      title: 'Create account',
      error,
      name: field(req, 'name').trim(),
      email: field(req, 'email').trim(),
      next,
      encodedNext: encodeURIComponent(next),
      forDevice: next.startsWith('/device'),
      csrfToken: this.csrf.tokenFor(req),
      minPasswordLength: MIN_PASSWORD_LENGTH,
      setupCode: field(req, 'setup_code') || queryParam(req, 'setup_code'),
    });
  }
}

/** What the sign-in page says after a redirect that ended the session. */
const LOGIN_NOTICES: Record<string, string> = {
  'signed_out=everywhere-and-tokens': 'You are signed out on every device, and every CLI token of yours is revoked.',
  'signed_out=everywhere': 'You are signed out on every device.',
  'password=reset': 'Your password is changed, and every browser signed out. Sign in with the new one.',
  'password=set': 'Your password is set. Sign in with it and your second factor.',
  'account=deleted': 'Your account is deleted, with every CLI token and session it had.',
  'email=verified': 'Your e-mail address is confirmed. Sign in to go on.',
  'code=expired': 'That sign-in waited too long for its code. Please sign in again.',
};

function loginNotice(req: Request): string | undefined {
  for (const key of ['signed_out', 'password', 'account', 'email', 'code']) {
    const notice = LOGIN_NOTICES[`${key}=${queryParam(req, key)}`];
    if (notice) return notice;
  }
  return undefined;
}
