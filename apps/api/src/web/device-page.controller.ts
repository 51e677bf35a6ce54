import { Controller, Get, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { formatUserCode, normalizeUserCode } from '@prospect/contract';
import type { Request, Response } from 'express';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { Public } from '../auth/public.decorator.js';
import { DeviceApprovalService, UndecidableDeviceLoginError, type UndecidableReason } from '../device-login/device-approval.service.js';
import { RateLimits, TooManyRequests } from '../rate-limits/rate-limits.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import { field, queryParam } from './form.js';
import { accountOf, CsrfGuard, PageRefusalFilter, SignedInGuard } from './page-guards.js';

const UNDECIDABLE: Record<UndecidableReason, [number, string, string]> = {
  unknown: [404, 'Code not found', 'That code does not match any sign-in request. Check the code in your terminal and try again.'],
  // A code may come from any registered OAuth client: the hint names the CLI's command as an example only.
  expired: [410, 'This code has expired', 'Start signing in again where you got the code (for the Prospect CLI: `prospect auth:login`) to get a new one.'],
  cancelled: [410, 'The terminal cancelled this sign-in', 'It stopped waiting (Ctrl-C, or a timeout), so this code can no longer be approved. Start signing in again (`prospect auth:login` for the Prospect CLI) if you still need to.'],
  decided: [409, 'This code was already used', 'This sign-in request was already approved or denied. Start signing in again (`prospect auth:login` for the Prospect CLI) if you still need to.'],
};

/** The verification URL: a signed-in person checks the code and approves or denies the CLI. */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
@Controller('device')
export class DevicePageController {
  constructor(
    private readonly deviceLogins: DeviceApprovalService,
    private readonly csrf: CsrfService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly limits: RateLimits,
  ) {}

  @Get()
  async show(@Req() req: Request, @Res() res: Response) {
    const account = accountOf(req, this.csrf);
    const typed = queryParam(req, 'user_code');
    if (!typed) return res.render('device-code', { title: 'Enter code', account });
    try {
      const login = await this.withCodeAttempt(req, () => this.deviceLogins.findForApproval(typed));
      const minutes = Math.max(0, Math.round((this.clock.now().getTime() - login.createdAt.getTime()) / 60_000));
      const started = minutes === 0 ? 'less than a minute ago' : `${minutes} minute${minutes === 1 ? '' : 's'} ago`;
      res.render('device-approve', { title: 'Approve sign-in', account, login, started });
    } catch (err) {
      this.renderRefusal(req, res, err, typed);
    }
  }

  @Post('approve')
  @UseGuards(CsrfGuard)
  approve(@Req() req: Request, @Res() res: Response) {
    return this.decide(req, res, 'approve');
  }

  @Post('deny')
  @UseGuards(CsrfGuard)
  deny(@Req() req: Request, @Res() res: Response) {
    return this.decide(req, res, 'deny');
  }

  private async decide(req: Request, res: Response, decision: 'approve' | 'deny') {
    const code = field(req, 'user_code');
    const userId = req.webUser!.id;
    try {
      // Guessing through the buttons is limited like guessing through the lookup.
      await this.withCodeAttempt(req, () =>
        decision === 'approve' ? this.deviceLogins.approve(code, userId, req.ip ?? null) : this.deviceLogins.deny(code, userId, req.ip ?? null),
      );
    } catch (err) {
      return this.renderRefusal(req, res, err, code);
    }
    res.status(200).render('device-decided', { title: decision === 'approve' ? 'Approved' : 'Denied', approved: decision === 'approve', account: accountOf(req, this.csrf) });
  }

  /**
   * Runs one use of a typed user code under the wrong-code limit: the try is counted (in
   * Postgres, atomically, so every replica and any number of parallel requests share it)
   * before the code is looked up; a code that exists gives its point back, an unknown one
   * is audited.
   */
  private async withCodeAttempt<T>(req: Request, use: () => Promise<T>): Promise<T> {
    const userId = req.webUser!.id;
    const ip = req.ip ?? '';
    await this.limits.attemptUserCode(userId, ip);
    try {
      const result = await use();
      await this.limits.userCodeFound(userId, ip);
      return result;
    } catch (err) {
      if (err instanceof UndecidableDeviceLoginError) {
        // Expired, used or cancelled: a real code all the same.
        if (err.reason === 'unknown') await this.audit.record('web.code_failed', { userId, ip: req.ip });
        else await this.limits.userCodeFound(userId, ip);
      }
      throw err;
    }
  }

  /** The page for a code that was refused: too many tries, or why it cannot be decided. */
  private renderRefusal(req: Request, res: Response, err: unknown, typed: string) {
    if (err instanceof TooManyRequests) {
      return res
        .status(429)
        .set('Retry-After', String(err.retryAfterSeconds))
        .render('too-many-codes', { title: 'Too many attempts', account: accountOf(req, this.csrf) });
    }
    if (!(err instanceof UndecidableDeviceLoginError)) throw err;
    this.renderUndecidable(req, res, err.reason, typed);
  }

  private renderUndecidable(req: Request, res: Response, reason: UndecidableReason, typed: string) {
    const [status, title, text] = UNDECIDABLE[reason];
    const normalized = normalizeUserCode(typed);
    res.status(status).render('device-undecidable', { title, text, code: normalized ? formatUserCode(normalized) : undefined, account: accountOf(req, this.csrf) });
  }
}
