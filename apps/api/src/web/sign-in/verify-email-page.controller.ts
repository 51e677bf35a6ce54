import { Controller, Get, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { EmailVerificationService, VERIFY_LINK_HOURS } from '../../accounts/email-verification.service.js';
import { Public } from '../../auth/public.decorator.js';
import { SecondFactorsService } from '../../accounts/second-factors.service.js';
import { AppConfig } from '../../config/app-config.js';
import { TooManyRequests } from '../../rate-limits/rate-limits.js';
import { UsersService } from '../../users/users.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { toWebUser, saveSession } from '../../web-sessions/web-account.js';
import { field, queryParam, safeNext } from '../form.js';
import { accountOf, CsrfGuard, PageRefusalFilter, SignedInGuard } from '../page-guards.js';
import { SignInService } from '../sign-in.service.js';
import { DeviceCookies } from '../device-cookies.js';
import { AccountService, WrongPasswordError } from '../../accounts/account.service.js';
import type { LinkAccount } from '../../accounts/email-verification.service.js';

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
    private readonly account: AccountService,
    private readonly deviceCookies: DeviceCookies,
    private readonly csrf: CsrfService,
    private readonly config: AppConfig,
  ) {}

  /**
   * The link opens a page that asks to confirm, by a POST (a GET must not sign anyone in: a link
   * opened by a mail scanner, or planted in a victim's browser, would sign it in as the sender).
   */
  @Get()
  async page(@Req() req: Request, @Res() res: Response) {
    const token = queryParam(req, 'token');
    const account = await this.verification.usableFor(token);
    if (!account) return this.renderUnusable(req, res);
    this.render(req, res, 200, token, account, safeNext(queryParam(req, 'next'), this.config.publicUrl));
  }

  /**
   * Confirms the address. The mailbox proves the address; the password (or the account's own
   * signed-in session) proves that whoever follows the link is whoever set that password: else
   * someone who signed up with another person's address would have it verified by its owner
   * clicking a link (account pre-hijacking). Then goes where the person was headed, signed in
   * (asking for the second factor, if the account has one).
   */
  @Post()
  @UseGuards(CsrfGuard)
  async confirm(@Req() req: Request, @Res() res: Response) {
    const token = field(req, 'token');
    const next = safeNext(field(req, 'next'), this.config.publicUrl);
    const account = await this.verification.usableFor(token);
    if (!account) return this.renderUnusable(req, res);
    const signedInAsOwner = req.webUser?.id === account.userId;
    if (!signedInAsOwner) {
      try {
        await this.account.checkPassword(account.email, field(req, 'password'), req.ip ?? null, await this.deviceCookies.trustedFor(req, account.email));
      } catch (err) {
        if (err instanceof WrongPasswordError) return this.render(req, res, 401, token, account, next, 'That is not the password of this account.');
        if (err instanceof TooManyRequests) {
          res.set('Retry-After', String(err.retryAfterSeconds));
          return this.render(req, res, 429, token, account, next, 'Too many wrong passwords. Please wait before trying again.');
        }
        throw err;
      }
    }
    const verified = await this.verification.verify(token, req.ip ?? null);
    const user = verified && (await this.users.findById(verified.userId));
    if (!user || user.disabledAt) return this.renderUnusable(req, res);
    if (signedInAsOwner) {
      req.webUser!.emailVerified = true;
    } else if (await this.factors.hasAny(user.id)) {
      // A password and a mailbox are one factor each of the same kind: with a second one set up, signing in asks for it.
      return res.redirect(303, `/login?email=verified&next=${encodeURIComponent(next)}`);
    } else {
      await this.signIn.complete(req, res, toWebUser(user), null);
    }
    req.session.notice = 'Your e-mail address is confirmed.';
    await saveSession(req);
    res.redirect(303, next);
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

  private render(req: Request, res: Response, status: number, token: string, account: LinkAccount, next: string, error?: string) {
    res.status(status).render('verify-email', {
      title: 'Confirm your e-mail address',
      error,
      token,
      next,
      email: account.email,
      signedIn: req.webUser?.id === account.userId,
      csrfToken: this.csrf.tokenFor(req),
    });
  }

  private renderUnusable(req: Request, res: Response) {
    res.status(410).render('verify-email-unusable', { title: 'This link no longer works', hours: VERIFY_LINK_HOURS, account: accountOf(req, this.csrf) });
  }
}
