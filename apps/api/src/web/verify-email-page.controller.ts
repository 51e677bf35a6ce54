import { Controller, Get, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { EmailVerificationService, VERIFY_LINK_HOURS } from '../accounts/email-verification.service.js';
import { Public } from '../auth/public.decorator.js';
import { SecondFactorsService } from '../accounts/second-factors.service.js';
import { AppConfig } from '../config/app-config.js';
import { TooManyRequests } from '../rate-limits/rate-limits.js';
import { UsersService } from '../users/users.service.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import { toWebUser, saveSession } from '../web-sessions/web-account.js';
import { field, queryParam, safeNext } from './form.js';
import { accountOf, CsrfGuard, PageRefusalFilter, SignedInGuard } from './page-guards.js';
import { SignInService } from './sign-in.service.js';

/** The mailed verification link, and asking for it again. */
@ApiExcludeController()
@Public()
@UseFilters(PageRefusalFilter)
@Controller('verify-email')
export class VerifyEmailPageController {
  constructor(
    private readonly verification: EmailVerificationService,
    private readonly users: UsersService,
    private readonly signIn: SignInService,
    private readonly factors: SecondFactorsService,
    private readonly csrf: CsrfService,
    private readonly config: AppConfig,
  ) {}

  /**
   * Following the link verifies the address and signs this browser in as its owner (it may be
   * another browser than the one that signed up), then goes where the person was headed.
   */
  @Get()
  async verify(@Req() req: Request, @Res() res: Response) {
    const account = await this.verification.verify(queryParam(req, 'token'), req.ip ?? null);
    const user = account && (await this.users.findById(account.userId));
    if (!user || user.disabledAt) {
      return res.status(410).render('verify-email-unusable', { title: 'This link no longer works', hours: VERIFY_LINK_HOURS, account: accountOf(req, this.csrf) });
    }
    if (req.webUser?.id === user.id) {
      req.webUser.emailVerified = true;
    } else if (await this.factors.hasAny(user.id)) {
      // A link in a mail is one factor: with a second one set up, signing in asks for both.
      return res.redirect(303, `/login?email=verified&next=${encodeURIComponent(safeNext(queryParam(req, 'next'), this.config.publicUrl))}`);
    } else {
      await this.signIn.logIn(req, toWebUser(user));
    }
    req.session.notice = 'Your e-mail address is confirmed.';
    await saveSession(req);
    res.redirect(303, safeNext(queryParam(req, 'next'), this.config.publicUrl));
  }

  @Post('resend')
  @HttpCode(200)
  @UseGuards(SignedInGuard, CsrfGuard)
  async resend(@Req() req: Request, @Res() res: Response) {
    const next = safeNext(field(req, 'next'), this.config.publicUrl);
    try {
      await this.verification.send(req.webUser!.id, next, { resend: true });
    } catch (err) {
      if (!(err instanceof TooManyRequests)) throw err;
      res.set('Retry-After', String(err.retryAfterSeconds));
      const heading = 'Too many mails';
      return res.status(429).render('error', { title: heading, heading, message: 'We sent several links in the last hour. Please use one of them, or wait before asking again.', account: accountOf(req, this.csrf) });
    }
    res.render('verify-email-sent', { title: 'Check your e-mail', hours: VERIFY_LINK_HOURS, account: accountOf(req, this.csrf) });
  }
}
