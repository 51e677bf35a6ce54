import { Controller, Get, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { SecondFactorsService, WrongCodeError } from '../accounts/second-factors.service.js';
import { Public } from '../auth/public.decorator.js';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { TooManyRequests } from '../rate-limits/rate-limits.js';
import { UsersService } from '../users/users.service.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import { toWebUser } from '../web-sessions/web-account.js';
import { field } from './form.js';
import { CsrfGuard, PageRefusalFilter } from './page-guards.js';
import { SignInService } from './sign-in.service.js';

/** How long the half-signed-in state (password right, code not yet given) lasts. */
export const PENDING_SIGN_IN_SECONDS = 5 * 60;

/** The second step of a sign-in for people with an authenticator app: its code, or a recovery code. */
@ApiExcludeController()
@Public()
@UseFilters(PageRefusalFilter)
@Controller('login/code')
export class SecondFactorPageController {
  constructor(
    private readonly factors: SecondFactorsService,
    private readonly users: UsersService,
    private readonly signIn: SignInService,
    private readonly csrf: CsrfService,
    private readonly clock: Clock,
    private readonly audit: AuditService,
  ) {}

  @Get()
  page(@Req() req: Request, @Res() res: Response) {
    if (!this.pending(req)) return res.redirect(303, '/login?code=expired');
    this.render(req, res, 200);
  }

  @Post()
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async verify(@Req() req: Request, @Res() res: Response) {
    const pending = this.pending(req);
    const user = pending && (await this.users.findById(pending.userId));
    if (!pending || !user || user.disabledAt) {
      delete req.session.pendingSignIn;
      return res.redirect(303, '/login?code=expired');
    }
    let used;
    try {
      used = await this.factors.verify(user, field(req, 'code'), req.ip ?? null);
    } catch (err) {
      if (err instanceof WrongCodeError) {
        await this.audit.record('web.login_failed', { userId: user.id, ip: req.ip, detail: { reason: 'wrong second-factor code' } });
        return this.render(req, res, 401, 'That code is not right, or was used already. Codes change every 30 seconds.');
      }
      if (err instanceof TooManyRequests) {
        res.set('Retry-After', String(err.retryAfterSeconds));
        return this.render(req, res, 429, err.message);
      }
      throw err;
    }
    await this.signIn.complete(req, res, toWebUser(user), used);
    if (used === 'recovery-code') req.session.notice = 'You signed in with a recovery code: it no longer works. If your phone is lost, set up the app again and make new codes.';
    res.redirect(303, pending.next);
  }

  /** The half-signed-in state of this session, unless it is too old. */
  private pending(req: Request) {
    const pending = req.session.pendingSignIn;
    if (pending && this.clock.now().getTime() - pending.at <= PENDING_SIGN_IN_SECONDS * 1000) return pending;
    return undefined;
  }

  private render(req: Request, res: Response, status: number, error?: string) {
    res.status(status).render('login-code', { title: 'Enter your code', error, csrfToken: this.csrf.tokenFor(req) });
  }
}
