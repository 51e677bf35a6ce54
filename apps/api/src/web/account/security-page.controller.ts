import { recordEnrolledFactor } from '../../web-sessions/session-proof.js';
import { Controller, Get, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { utcMinute } from '@prospect/contract';
import type { Request, Response } from 'express';
import { saveSession } from '../../web-sessions/web-account.js';
import { PasskeysService } from '../../accounts/passkeys.service.js';
import { RECOVERY_CODE_COUNT, SecondFactorsService, WrongCodeError } from '../../accounts/second-factors.service.js';
import { AuditService } from '../../audit/audit.service.js';
import { Public } from '../../auth/public.decorator.js';
import { AppConfig } from '../../config/app-config.js';
import { TooManyRequests } from '../../rate-limits/rate-limits.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { field, pageParam, queryParam } from '../form.js';
import { accountOf, AllowsWithoutSecondFactor, CsrfGuard, PageRefusalFilter, SignedInGuard, SudoGuard, VerifiedEmailGuard } from '../page-guards.js';
import { describeEvent, SECURITY_LOG_TYPES } from './security-log.js';

const EVENTS_PER_PAGE = 50;

const DONE: Record<string, string> = {
  removed: 'The authenticator app is removed.',
  'passkey-added': 'The passkey is added: use it to sign in, or as the second step after your password.',
  'passkey-renamed': 'The passkey is renamed.',
  'passkey-name-refused': 'A passkey’s name is 1 to 60 characters, without control characters.',
  'passkey-removed': 'The passkey is removed.',
};

/** /settings/security: the authenticator app and recovery codes, and the person's own security log. */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@AllowsWithoutSecondFactor()
@UseFilters(PageRefusalFilter)
@Controller('settings/security')
export class SecurityPageController {
  constructor(
    private readonly factors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly events: AuditService,
    private readonly csrf: CsrfService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  async show(@Req() req: Request, @Res() res: Response) {
    await this.render(req, res, 200, { done: DONE[queryParam(req, 'done')] });
  }

  /** A new key, shown as a QR code and as text, kept sealed in the session until its first code confirms it. */
  @Post('totp')
  @HttpCode(200)
  @UseGuards(CsrfGuard, VerifiedEmailGuard, SudoGuard)
  async begin(@Req() req: Request, @Res() res: Response) {
    if (await this.factors.hasTotp(req.webUser!.id)) return res.redirect(303, '/settings/security');
    const enrolment = await this.factors.beginEnrolment(req.webUser!);
    req.session.pendingTotp = enrolment.pendingSealed;
    await this.render(req, res, 200, { enrolment });
  }

  @Post('totp/confirm')
  @HttpCode(200)
  @UseGuards(CsrfGuard, VerifiedEmailGuard, SudoGuard)
  async confirm(@Req() req: Request, @Res() res: Response) {
    const pending = req.session.pendingTotp;
    const user = req.webUser!;
    if (!pending) return res.redirect(303, '/settings/security');
    let codes;
    try {
      codes = await this.factors.confirmEnrolment(user, pending, field(req, 'code'), req.ip ?? null);
    } catch (err) {
      if (!(err instanceof WrongCodeError || err instanceof TooManyRequests)) throw err;
      if (err instanceof TooManyRequests) res.set('Retry-After', String(err.retryAfterSeconds));
      const error = err instanceof WrongCodeError ? 'That code does not match: enter the code the app shows now, after adding the key.' : err.message;
      return this.render(req, res, err instanceof WrongCodeError ? 400 : 429, { enrolment: (await this.factors.pendingKey(user, pending)) ?? undefined, enrolError: error });
    }
    delete req.session.pendingTotp;
    delete req.session.mustEnrolSecondFactor;
    if (codes) recordEnrolledFactor(req);
    if (!codes) return res.redirect(303, '/settings/security');
    // Shown in this answer only, never stored in clear: a reload shows the page without them.
    await this.render(req, res, 200, { codes, enrolled: true });
  }

  @Post('totp/remove')
  @UseGuards(CsrfGuard, SudoGuard)
  async remove(@Req() req: Request, @Res() res: Response) {
    await this.factors.remove(req.webUser!.id, req.ip ?? null);
    if (this.config.requireSecondFactor) req.session.mustEnrolSecondFactor = true;
    await saveSession(req);
    res.redirect(303, '/settings/security?done=removed');
  }

  @Post('recovery-codes')
  @HttpCode(200)
  @UseGuards(CsrfGuard, SudoGuard)
  async regenerate(@Req() req: Request, @Res() res: Response) {
    if (!(await this.factors.hasTotp(req.webUser!.id))) return res.redirect(303, '/settings/security');
    await this.render(req, res, 200, { codes: await this.factors.regenerateRecoveryCodes(req.webUser!.id, req.ip ?? null) });
  }

  private async render(
    req: Request,
    res: Response,
    status: number,
    notice: { done?: string; enrolment?: { key: string; qrDataUrl: string }; enrolError?: string; codes?: string[]; enrolled?: boolean },
  ) {
    const user = req.webUser!;
    const page = pageParam(req);
    const events = await this.events.listForUser(user.id, SECURITY_LOG_TYPES, EVENTS_PER_PAGE + 1, (page - 1) * EVENTS_PER_PAGE);
    res.status(status).render('security', {
      title: 'Security',
      onAccount: true,
      onSecurity: true,
      wide: true,
      account: accountOf(req, this.csrf),
      hasTotp: await this.factors.hasTotp(user.id),
      passkeys: true,
      passkeyList: (await this.passkeys.list(user.id)).map((p) => ({ id: p.id, name: p.name, added: utcMinute(p.createdAt), lastUsed: p.lastUsedAt && utcMinute(p.lastUsedAt) })),
      recoveryCodesLeft: await this.factors.unusedRecoveryCodes(user.id),
      recoveryCodeCount: RECOVERY_CODE_COUNT,
      mustEnrol: req.session.mustEnrolSecondFactor === true,
      events: events.slice(0, EVENTS_PER_PAGE).map((e) => ({ ...describeEvent(e), ip: e.ip, when: utcMinute(e.createdAt) })),
      newer: page > 1 ? page - 1 : undefined,
      older: events.length > EVENTS_PER_PAGE ? page + 1 : undefined,
      ...notice,
    });
  }
}
