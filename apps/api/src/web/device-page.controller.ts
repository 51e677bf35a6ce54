import { Controller, Get, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { InjectDataSource } from '@nestjs/typeorm';
import { formatUserCode, normalizeUserCode } from '@prospect/contract';
import type { Request, Response } from 'express';
import type { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { Public } from '../common/public.decorator.js';
import { DeviceLoginService, UndecidableDeviceLoginError, type UndecidableReason } from '../device-login/device-login.service.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import type { WebUser } from '../web-sessions/web-account.js';
import { field, queryParam } from './form.js';
import { accountOf, CsrfGuard, PageRefusalFilter, SignedInGuard } from './page-guards.js';

/** Wrong codes allowed per minute, per signed-in person and per IP, against guessing. */
export const WRONG_CODES_PER_MINUTE = 5;

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
    private readonly deviceLogins: DeviceLoginService,
    private readonly csrf: CsrfService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  @Get()
  async show(@Req() req: Request, @Res() res: Response) {
    const account = accountOf(req, this.csrf);
    const typed = queryParam(req, 'user_code');
    if (!typed) return res.render('device-code', { title: 'Enter code', account });
    if (await this.tooManyWrongCodes(req.webUser!, req.ip)) {
      return res.status(429).set('Retry-After', '60').render('too-many-codes', { title: 'Too many attempts', account });
    }
    try {
      const login = await this.deviceLogins.findForApproval(typed);
      const minutes = Math.max(0, Math.round((this.clock.now().getTime() - login.createdAt.getTime()) / 60_000));
      const started = minutes === 0 ? 'less than a minute ago' : `${minutes} minute${minutes === 1 ? '' : 's'} ago`;
      res.render('device-approve', { title: 'Approve sign-in', account, login, started });
    } catch (err) {
      if (!(err instanceof UndecidableDeviceLoginError)) throw err;
      if (err.reason === 'unknown') await this.audit.record('web.code_failed', { userId: req.webUser!.id, ip: req.ip });
      this.renderUndecidable(req, res, err.reason, typed);
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
    // Guessing through the buttons is limited like guessing through the lookup.
    if (await this.tooManyWrongCodes(req.webUser!, req.ip)) {
      return res.status(429).set('Retry-After', '60').render('too-many-codes', { title: 'Too many attempts', account: accountOf(req, this.csrf) });
    }
    try {
      if (decision === 'approve') await this.deviceLogins.approve(code, userId, req.ip ?? null);
      else await this.deviceLogins.deny(code, userId, req.ip ?? null);
    } catch (err) {
      if (!(err instanceof UndecidableDeviceLoginError)) throw err;
      if (err.reason === 'unknown') await this.audit.record('web.code_failed', { userId, ip: req.ip });
      return this.renderUndecidable(req, res, err.reason, code);
    }
    res.status(200).render('device-decided', { title: decision === 'approve' ? 'Approved' : 'Denied', approved: decision === 'approve', account: accountOf(req, this.csrf) });
  }

  /** Counted in Postgres, so every API instance enforces the same limit. */
  private async tooManyWrongCodes(user: WebUser, ip: string | undefined): Promise<boolean> {
    const since = new Date(this.clock.now().getTime() - 60_000);
    const [row] = (await this.db.query(
      `SELECT count(*) FILTER (WHERE user_id = $1)::int AS by_user, count(*) FILTER (WHERE ip = $2)::int AS by_ip
         FROM auth_events WHERE type = 'web.code_failed' AND created_at > $3 AND (user_id = $1 OR ip = $2)`,
      [user.id, ip ?? null, since],
    )) as Array<{ by_user: number; by_ip: number }>;
    return row!.by_user >= WRONG_CODES_PER_MINUTE || row!.by_ip >= WRONG_CODES_PER_MINUTE;
  }

  private renderUndecidable(req: Request, res: Response, reason: UndecidableReason, typed: string) {
    const [status, title, text] = UNDECIDABLE[reason];
    const normalized = normalizeUserCode(typed);
    res.status(status).render('device-undecidable', { title, text, code: normalized ? formatUserCode(normalized) : undefined, account: accountOf(req, this.csrf) });
  }
}
