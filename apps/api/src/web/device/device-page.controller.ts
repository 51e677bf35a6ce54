import { Controller, Get, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { CLI_CLIENT_ID, formatUserCode, normalizeUserCode } from '@prospect/contract';
import type { Request, Response } from 'express';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { Public } from '../../auth/public.decorator.js';
import {
  type CodeHolder,
  DeviceApprovalService,
  type DeviceDecision,
  type DeviceLoginClient,
  type DeviceLoginForApproval,
  UndecidableDeviceLoginError,
  type UndecidableReason,
} from '../../device-login/device-approval.service.js';
import { ApprovingSessionEndedError } from '../../grants/grants.service.js';
import { TooManyRequests } from '../../rate-limits/rate-limits.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { hashSessionId } from '../../web-sessions/hashed-session-store.js';
import { provenAt } from '../../web-sessions/session-proof.js';
import { field, queryParam } from '../form.js';
import { scopeLines } from '../scope-words.js';
import { accountOf, browserInSudoMode, CsrfGuard, MayApproveGuard, PageRefusalFilter, SignedInGuard, SudoRequired, VerifiedEmailGuard } from '../page-guards.js';

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

/** Whose typed codes these are (the wrong-code limit counts them per person and per address: DeviceApprovalService). */
const holderOf = (req: Request): CodeHolder => ({ userId: req.webUser!.id, ip: req.ip ?? null, userAgent: req.get('user-agent') ?? null });

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
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  @Get()
  async show(@Req() req: Request, @Res() res: Response) {
    const account = accountOf(req, this.csrf);
    const typed = queryParam(req, 'user_code');
    if (!typed) return res.render('device-code', { title: 'Enter the code', account });
    let login: DeviceLoginForApproval;
    try {
      login = await this.deviceLogins.findFor(holderOf(req), typed);
    } catch (err) {
      return this.renderRefusal(req, res, err, typed);
    }
    // Administration is approved in sudo mode only: asked before the page, which it then shows
    // again (as for every approval once sudo mode has lapsed, which its button checks).
    if (login.asksForAdmin && !browserInSudoMode(req, this.clock, this.config)) throw new SudoRequired(`/device?user_code=${encodeURIComponent(login.userCode)}`);
    const minutes = Math.max(0, Math.round((this.clock.now().getTime() - login.createdAt.getTime()) / 60_000));
    const started = minutes === 0 ? 'less than a minute ago' : `${minutes} minute${minutes === 1 ? '' : 's'} ago`;
    const adminHours = Math.round((this.config.adminGrantSeconds / 3600) * 10) / 10;
    const isAdmin = account?.isAdmin === true;
    res.render('device-approve', {
      title: 'Approve sign-in',
      account,
      login,
      started,
      adminHours,
      // In sentences, `admin` for administrators only (it gives nobody else anything).
      scopes: scopeLines(login.scopes.map((scope) => scope.name), { isAdmin }),
      grantsAdmin: login.asksForAdmin && isAdmin,
      // The client's name is shown once, the registered one; what it calls itself is a detail.
      program: login.userAgent ?? login.clientName,
      sentName: login.userAgent ? login.clientName : null,
    });
  }

  @Post('approve')
  @UseGuards(CsrfGuard, MayApproveGuard)
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
    let client: DeviceDecision;
    try {
      const proof = {
        credentialEpoch: req.webUser!.credentialEpoch,
        amr: req.session.proofAmr ?? [],
        secondFactor: req.session.secondFactorShown === true,
        authTime: new Date(provenAt(req, this.clock.now().getTime())),
        webSession: hashSessionId(req.sessionID),
      };
      client = await this.deviceLogins.decideFor({ ...holderOf(req), ...proof }, code, decision);
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

  /** The page for a code that was refused: too many tries, or why it cannot be decided. */
  private renderRefusal(req: Request, res: Response, err: unknown, typed: string) {
    if (err instanceof TooManyRequests) {
      return res
        .status(429)
        .set('Retry-After', String(err.retryAfterSeconds))
        .render('too-many-codes', { title: 'Too many attempts', account: accountOf(req, this.csrf) });
    }
    const normalized = normalizeUserCode(typed);
    // Signed out while approving (everywhere, or by the provider it signed in through): nothing was
    // approved. The page again, which asks to sign in first, keeps the code.
    if (err instanceof ApprovingSessionEndedError) return res.redirect(303, normalized ? `/device?user_code=${formatUserCode(normalized)}` : '/device');
    if (!(err instanceof UndecidableDeviceLoginError)) throw err;
    const { status, title, text } = UNDECIDABLE[err.reason];
    res.status(status).render('device-undecidable', {
      title,
      text: text(err.client?.displayName ?? 'the application'),
      command: err.reason === 'unknown' ? undefined : cliCommandFor(err.client),
      code: normalized ? formatUserCode(normalized) : undefined,
      account: accountOf(req, this.csrf),
    });
  }
}
