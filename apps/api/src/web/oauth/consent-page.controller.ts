import { Controller, Get, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { OAUTH_ROUTES } from '@prospect/contract';
import type { Request, Response } from 'express';
import { EmailVerificationService } from '../../accounts/email-verification.service.js';
import { AuditService } from '../../audit/audit.service.js';
import { Public } from '../../auth/public.decorator.js';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { type AuthorizationRequest, AuthorizationService, type BrowserState, type CheckedAuthorization, type Proof } from '../../oauth/authorization.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { hashSessionId } from '../../web-sessions/hashed-session-store.js';
import { provenAt } from '../../web-sessions/session-proof.js';
import { field } from '../form.js';
import { allowFormTarget } from '../page-headers.js';
import {
  accountOf,
  ApprovalRule,
  CsrfGuard,
  EmailUnverified,
  browserInSudoMode,
  PageRefusalFilter,
  SecondFactorRequired,
  SignedInGuard,
  SignInRequired,
  SudoRequired,
  VerifiedEmailGuard,
} from '../page-guards.js';
import { scopeLines } from '../scope-words.js';
import { SignInService } from '../sign-in.service.js';

/**
 * The authorization endpoint's browser side (issue #33): GET /oauth/authorize checks the request
 * (AuthorizationService), then follows the rules device approval follows — sign in first (with
 * the second factor), REQUIRE_SECOND_FACTOR, a proven address, sudo mode to approve — and answers
 * with a code at once when the person approved this client for these scopes before, or shows the
 * consent page. Its answer (Approve / Deny) redirects back to the client.
 */
@ApiExcludeController()
@Public()
@UseFilters(PageRefusalFilter)
@Controller(OAUTH_ROUTES.authorize.slice(1))
export class ConsentPageController {
  constructor(
    private readonly authorization: AuthorizationService,
    private readonly verification: EmailVerificationService,
    private readonly signIn: SignInService,
    private readonly csrf: CsrfService,
    private readonly audit: AuditService,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly approvalRule: ApprovalRule,
  ) {}

  @Get()
  async authorize(@Req() req: Request, @Res() res: Response) {
    const checked = await this.authorization.check(req.query as Record<string, unknown>);
    if (checked.kind !== 'valid') return this.answerInvalid(req, res, checked);
    const { request } = checked;
    const step = await this.authorization.nextStep(request, this.browserOf(req));
    // Each detour comes back here with the request as it was, less what a fresh proof answers (prompt=login, max_age).
    const back = this.authorization.canonicalPath(request, { afterProof: true });
    switch (step.kind) {
      case 'sign-in':
        throw new SignInRequired(back);
      case 'enrol-second-factor':
        throw new SecondFactorRequired();
      case 'verify-email':
        throw new EmailUnverified(this.authorization.canonicalPath(request));
      case 'confirm':
        throw new SudoRequired(back);
      case 'error':
        return this.sendBack(req, res, step.location, request);
      case 'consent':
        return this.renderConsent(req, res, request, step.otherAccountHinted);
      case 'issue': {
        const user = this.browserOf(req).user!;
        const location = await this.authorization.issue(request, user, this.proofOf(req));
        return this.sendBack(req, res, location, request);
      }
    }
  }

  /** The consent form's answer: the request checked again as it came, then Approve (in sudo mode) or Deny. */
  @Post('consent')
  @UseGuards(SignedInGuard, CsrfGuard, VerifiedEmailGuard)
  async decide(@Req() req: Request, @Res() res: Response) {
    const checked = await this.authorization.check(req.body as Record<string, unknown>);
    if (checked.kind === 'refused') return this.answerInvalid(req, res, checked);
    // The consent page allowed its redirect URI as a form target: a redirect there goes through.
    if (checked.kind === 'error') return res.redirect(303, checked.location);
    const { request } = checked;
    const decision = field(req, 'decision');
    if (decision === 'deny') return res.redirect(303, this.authorization.deny(request));
    if (decision !== 'approve') {
      return res.status(400).render('error', { title: 'Approve or deny', heading: 'Approve or deny', message: 'Please choose Approve or Deny.', account: accountOf(req, this.csrf) });
    }
    // The rule of every approval: sudo mode lapsed while the page was open means confirming first, then the page again.
    this.approvalRule.require(req, this.authorization.canonicalPath(request, { afterProof: true }));
    const user = this.browserOf(req).user!;
    const proof = this.proofOf(req);
    res.redirect(303, await this.authorization.approve(request, user, proof, req.ip ?? null));
  }

  /** "Not you?": signs this browser out and back in, then on with the same request. */
  @Post('switch')
  @UseGuards(SignedInGuard, CsrfGuard)
  async switchAccount(@Req() req: Request, @Res() res: Response) {
    const checked = await this.authorization.check(req.body as Record<string, unknown>);
    const next = checked.kind === 'valid' ? this.authorization.canonicalPath(checked.request, { afterProof: true }) : undefined;
    const user = req.webUser!;
    await this.signIn.logOut(req);
    await this.audit.record('web.logout', { userId: user.id, ip: req.ip, userAgent: req.get('user-agent') });
    res.redirect(303, next ? `/login?next=${encodeURIComponent(next)}` : '/login');
  }

  private renderConsent(req: Request, res: Response, request: AuthorizationRequest, otherAccountHinted: boolean) {
    allowFormTarget(res, request.redirectUri);
    const account = accountOf(req, this.csrf);
    // In sentences, who you are first; `admin` for administrators only (it gives nobody else anything).
    const scopes = scopeLines(request.scopes, { isAdmin: account?.isAdmin === true });
    // The request as the form carries it back: exactly what was checked, nothing else.
    const hidden = [...new URLSearchParams(this.authorization.canonicalPath(request).split('?')[1]).entries()].map(([name, value]) => ({ name, value }));
    res.render('consent', {
      title: `Sign in to ${request.client.name}`,
      account,
      client: { id: request.client.id, name: request.client.name },
      scopes,
      hidden,
      returnTo: new URL(request.redirectUri).origin !== 'null' ? new URL(request.redirectUri).origin : request.redirectUri,
      otherAccountHinted,
      loginHint: request.loginHint,
    });
  }

  /**
   * The answer to the client. A direct redirect, unless this request ends a form of this site (a
   * sign-in, a second factor, sudo mode: `Sec-Fetch-Site: same-origin`) or the browser does not
   * say: that form's page allowed only this site as its target (`form-action 'self'`), so
   * Chromium would stop a redirect that leaves it. A page that goes on by itself instead.
   */
  private sendBack(req: Request, res: Response, location: string, request: AuthorizationRequest) {
    const site = req.get('sec-fetch-site');
    if (site === 'none' || site === 'cross-site' || site === 'same-site') return res.redirect(303, location);
    res.render('oauth-continue', { title: `Back to ${request.client.name}`, clientName: request.client.name, location, account: accountOf(req, this.csrf) });
  }

  /** A request that cannot go back to its client: a page for the person; an error at the redirect URI otherwise. */
  private answerInvalid(req: Request, res: Response, checked: Exclude<CheckedAuthorization, { kind: 'valid' }>) {
    if (checked.kind === 'error') return res.redirect(303, checked.location);
    res.status(checked.status).render('error', { title: checked.title, heading: checked.title, message: checked.message, account: accountOf(req, this.csrf) });
  }

  /** What the session proved and when, as it recorded it (web-sessions/session-proof.ts): a session from before that record claims no method. */
  private proofOf(req: Request): Proof {
    return { authTime: new Date(this.provenAt(req)), amr: req.session.proofAmr ?? [], secondFactor: req.session.secondFactorShown === true };
  }

  private provenAt(req: Request): number {
    return provenAt(req, this.clock.now().getTime());
  }

  private browserOf(req: Request): BrowserState {
    const user = req.webUser;
    return {
      user: user && { id: user.id, email: user.email, name: user.name, emailVerified: user.emailVerified, credentialEpoch: user.credentialEpoch, session: hashSessionId(req.sessionID) },
      mustEnrolSecondFactor: req.session?.mustEnrolSecondFactor === true,
      emailBlocked: user ? this.verification.blocks(user) : false,
      provenAt: this.provenAt(req),
      inSudoMode: browserInSudoMode(req, this.clock, this.config),
    };
  }
}
