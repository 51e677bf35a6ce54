import { Controller, Get, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { CLI_CLIENT_ID, formatUserCode, normalizeUserCode } from '@prospect/contract';
import type { Request, Response } from 'express';
import { AuditService } from '../audit/audit.service.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { Public } from '../auth/public.decorator.js';
import {
  DeviceApprovalService,
  type DeviceDecision,
  type DeviceLoginClient,
  type DeviceLoginForApproval,
  UndecidableDeviceLoginError,
  type UndecidableReason,
} from '../device-login/device-approval.service.js';
import { RateLimits, TooManyRequests } from '../rate-limits/rate-limits.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import { field, queryParam } from './form.js';
import { accountOf, CsrfGuard, inSudoMode, PageRefusalFilter, SignedInGuard, SudoGuard, SudoRequired, VerifiedEmailGuard } from './page-guards.js';

/**
 * Why a code cannot be decided, in words for whoever holds it: a code may come from any registered
 * OAuth client, so the page names the client that started it (when the code matched one) and
 * shows the CLI's command only when that client is the CLI.
 */
const UNDECIDABLE: Record<UndecidableReason, { status: number; title: string; text: (client: string) => string }> = {
  unknown: { status: 404, title: 'Code not found', text: () => 'That code does not match any sign-in request. Check the code where you got it and try again.' },
  expired: { status: 410, title: 'This code has expired', text: (client) => `Start signing in to ${client} again to get a new code.` },
  cancelled: {
    status: 410,
    title: 'This sign-in was cancelled',
    text: (client) =>
      `${client} stopped waiting for it (closed, or timed out), or an administrator disabled ${client}, so this code can no longer be approved. Start signing in again if you still need to.`,
  },
  decided: {
    status: 409,
    title: 'This code was already used',
    text: (client) => `This request from ${client} was already approved or denied. Start signing in again if you still need to.`,
  },
};

/** The command that starts a new sign-in, for pages about a login the CLI started. */
const cliCommandFor = (client?: DeviceLoginClient) => (client?.id === CLI_CLIENT_ID ? 'prospect auth:login' : undefined);

/** The verification URL: a signed-in person checks the code and approves or denies the client that shows it. */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard, VerifiedEmailGuard)
@UseFilters(PageRefusalFilter)
@Controller('device')
export class DevicePageController {
  constructor(
    private readonly deviceLogins: DeviceApprovalService,
    private readonly csrf: CsrfService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly limits: RateLimits,
    private readonly config: AppConfig,
  ) {}

  @Get()
  async show(@Req() req: Request, @Res() res: Response) {
    const account = accountOf(req, this.csrf);
    const typed = queryParam(req, 'user_code');
    if (!typed) return res.render('device-code', { title: 'Enter the code', account });
    let login: DeviceLoginForApproval;
    try {
      login = await this.withCodeAttempt(req, () => this.deviceLogins.findForApproval(typed));
    } catch (err) {
      return this.renderRefusal(req, res, err, typed);
    }
    // Administration is approved in sudo mode only: asked before the page, which it then shows
    // again (as for every approval once sudo mode has lapsed, which its button checks).
    if (login.asksForAdmin && !inSudoMode(req, this.clock, this.config)) throw new SudoRequired(`/device?user_code=${encodeURIComponent(login.userCode)}`);
    const minutes = Math.max(0, Math.round((this.clock.now().getTime() - login.createdAt.getTime()) / 60_000));
    const started = minutes === 0 ? 'less than a minute ago' : `${minutes} minute${minutes === 1 ? '' : 's'} ago`;
    const adminHours = Math.round((this.config.adminGrantSeconds / 3600) * 10) / 10;
    res.render('device-approve', { title: 'Approve sign-in', account, login, started, adminHours });
  }

  @Post('approve')
  @UseGuards(CsrfGuard, SudoGuard)
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
    let client: DeviceDecision;
    try {
      // Guessing through the buttons is limited like guessing through the lookup.
      client = await this.withCodeAttempt(req, () =>
        decision === 'approve' ? this.deviceLogins.approve(code, userId, req.ip ?? null) : this.deviceLogins.deny(code, userId, req.ip ?? null),
      );
    } catch (err) {
      return this.renderRefusal(req, res, err, code);
    }
    // The same decision sent again by the person who made it (a reload, a proxy's retry) went
    // through the first time: it gets the same page, saying so, rather than "already used".
    res.status(200).render('device-decided', {
      title: decision === 'approve' ? `${client.displayName} is signed in` : 'Sign-in denied',
      approved: decision === 'approve',
      madeBefore: client.madeBefore,
      client: client.displayName,
      inTerminal: cliCommandFor(client) !== undefined,
      account: accountOf(req, this.csrf),
    });
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
    const { status, title, text } = UNDECIDABLE[err.reason];
    const normalized = normalizeUserCode(typed);
    res.status(status).render('device-undecidable', {
      title,
      text: text(err.client?.displayName ?? 'the application'),
      command: err.reason === 'unknown' ? undefined : cliCommandFor(err.client),
      code: normalized ? formatUserCode(normalized) : undefined,
      account: accountOf(req, this.csrf),
    });
  }
}
