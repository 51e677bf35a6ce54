import { Controller, Get, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { PasswordResetService, RESET_LINK_MINUTES, UnusableResetLinkError } from '../../accounts/password-reset.service.js';
import { SecondFactorsService } from '../../accounts/second-factors.service.js';
import { TooManyRequests } from '../../rate-limits/rate-limits.js';
import { MIN_PASSWORD_LENGTH } from '../../users/users.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { field, looksLikeEmail, queryParam } from '../form.js';
import { DeviceCookies } from '../device-cookies.js';
import { CsrfGuard, PageRefusalFilter } from '../page-guards.js';

/**
 * "Forgot your password?": ask for a link by e-mail address (the same answer whether or not an
 * account uses it), then follow it to set a new password. Signed-in or not.
 */
@ApiExcludeController()
@Public()
@UseFilters(PageRefusalFilter)
@Controller('password')
export class PasswordPagesController {
  constructor(
    private readonly resets: PasswordResetService,
    private readonly csrf: CsrfService,
    private readonly deviceCookies: DeviceCookies,
    private readonly factors: SecondFactorsService,
  ) {}

  @Get('forgot')
  forgotPage(@Req() req: Request, @Res() res: Response) {
    this.renderForgot(req, res, 200);
  }

  @Post('forgot')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async forgot(@Req() req: Request, @Res() res: Response) {
    const email = field(req, 'email').trim();
    if (!looksLikeEmail(email)) return this.renderForgot(req, res, 400, 'Please enter a valid e-mail address.', email);
    try {
      await this.resets.request(email, req.ip ?? null);
    } catch (err) {
      if (!(err instanceof TooManyRequests)) throw err;
      res.set('Retry-After', String(err.retryAfterSeconds));
      return this.renderForgot(req, res, 429, 'Too many reset requests for this address. Please wait an hour before asking again.', email);
    }
    res.render('password-forgot-sent', { title: 'Check your e-mail', email, minutes: RESET_LINK_MINUTES });
  }

  @Get('reset')
  async resetPage(@Req() req: Request, @Res() res: Response) {
    const token = queryParam(req, 'token');
    if (!(await this.resets.isUsable(token))) return this.renderUnusable(res);
    this.renderReset(req, res, 200, token);
  }

  @Post('reset')
  @UseGuards(CsrfGuard)
  async reset(@Req() req: Request, @Res() res: Response) {
    const token = field(req, 'token');
    const password = field(req, 'password');
    if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) {
      return this.renderReset(req, res, 400, token, `Your new password needs at least ${MIN_PASSWORD_LENGTH} characters.`);
    }
    if (password !== field(req, 'password_again')) return this.renderReset(req, res, 400, token, 'The two passwords are not the same.');
    try {
      const account = await this.resets.reset(token, password, field(req, 'revoke_tokens') === 'on', req.ip ?? null);
      // Whoever holds the link controls the account's password now: this browser is recognised for
      // its next sign-in under it, even while others' failures block the account's. Not for an
      // account with a second factor: the link is one factor, and a recognised browser would get
      // code guesses of its own; that browser is recognised once it signs in with both.
      if (!(await this.factors.hasAny(account.id))) this.deviceCookies.issue(res, account);
    } catch (err) {
      if (err instanceof UnusableResetLinkError) return this.renderUnusable(res);
      throw err;
    }
    // This browser was signed out with the others: the next step is signing in with the new password.
    res.redirect(303, '/login?password=reset');
  }

  private renderForgot(req: Request, res: Response, status: number, error?: string, email = '') {
    res.status(status).render('password-forgot', { title: 'Reset your password', error, email, csrfToken: this.csrf.tokenFor(req) });
  }

  private renderReset(req: Request, res: Response, status: number, token: string, error?: string) {
    res.status(status).render('password-reset', { title: 'Choose a new password', error, token, minLength: MIN_PASSWORD_LENGTH, csrfToken: this.csrf.tokenFor(req) });
  }

  private renderUnusable(res: Response) {
    res.status(410).render('password-reset-unusable', { title: 'This link no longer works' });
  }
}
