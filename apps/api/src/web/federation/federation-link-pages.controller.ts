import { Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { SecondFactorsService } from '../../accounts/second-factors.service.js';
import { AuditService } from '../../audit/audit.service.js';
import { Public } from '../../auth/public.decorator.js';
import { Clock } from '../../common/clock.js';
import { RateLimits, TooManyRequests } from '../../rate-limits/rate-limits.js';
import { UsersService } from '../../users/users.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { type FederatedSignIn, type PendingFederatedLink, regenerateSession, saveSession, toWebUser } from '../../web-sessions/web-account.js';
import { DeviceCookies } from '../device-cookies.js';
import { FederationRefusalPage } from './federation-refusal-page.js';
import { field, queryParam } from '../form.js';
import { SignInService } from '../sign-in.service.js';
import { PENDING_LINK_MINUTES } from '../../federation/federation-policy.js';
import { FederationRefused, FederationSignIn } from '../../federation/federation-sign-in.service.js';

/** Where the second step of a sign-in goes after the password proved the account to link. */
const FINISH_LINK = '/login/link/finish';

/**
 * Proving an existing account in this same browser before a provider's identity is linked to it
 * (issue #34; the provider's answer that leads here: federation-pages.controller.ts), by its
 * password (and second factor) or by a link mailed to the address. Refusals are pages that say
 * why, audited with the reason (`federation.login_refused`).
 */
@ApiExcludeController()
@Public()
@Controller('login')
export class FederationLinkPagesController {
  constructor(
    private readonly federation: FederationSignIn,
    private readonly signIn: SignInService,
    private readonly factors: SecondFactorsService,
    private readonly users: UsersService,
    private readonly deviceCookies: DeviceCookies,
    private readonly limits: RateLimits,
    private readonly csrf: CsrfService,
    private readonly audit: AuditService,
    private readonly refusalPage: FederationRefusalPage,
    private readonly clock: Clock,
  ) {}

  @Get('link')
  async linkPage(@Req() req: Request, @Res() res: Response) {
    const pending = this.pending(req);
    if (!pending) return this.expired(res);
    await this.renderLink(req, res, 200, pending);
  }

  /** The account's password: with a second factor, its second step comes next (/login/code), then FINISH_LINK. */
  @Post('link/password')
  @HttpCode(200)
  async linkWithPassword(@Req() req: Request, @Res() res: Response) {
    const pending = this.pending(req);
    if (!pending) return this.expired(res);
    if (!this.csrf.isValid(req)) return this.renderLink(req, res, 403, pending, 'Your form expired. Please try again.');
    const browser = await this.deviceCookies.trustedFor(req, pending.email);
    try {
      await this.limits.attemptSignIn(pending.email, req.ip ?? '', browser);
    } catch (err) {
      if (!(err instanceof TooManyRequests)) throw err;
      res.set('Retry-After', String(err.retryAfterSeconds));
      return this.renderLink(req, res, 429, pending, `${err.message} You can get a link by mail instead.`);
    }
    const user = await this.users.authenticate(pending.email, field(req, 'password'));
    if (!user || user.id !== pending.userId || user.disabledAt) {
      await this.audit.record('web.login_failed', { userId: pending.userId, ip: req.ip, detail: { reason: `bad credentials (linking ${pending.providerName})`, browser: req.get('user-agent')?.slice(0, 200) ?? null } });
      return this.renderLink(req, res, 401, pending, 'That password is not the one of this account.');
    }
    await this.limits.signInSucceeded(pending.email, req.ip ?? '', browser);
    if (await this.factors.hasAny(user.id)) {
      // Half signed in, as after a password on the sign-in page (a new session id), the pending link kept.
      await regenerateSession(req);
      req.session.pendingFederatedLink = pending;
      req.session.pendingSignIn = { userId: user.id, at: this.clock.now().getTime(), next: FINISH_LINK, credentialEpoch: user.credentialEpoch };
      await saveSession(req);
      return res.redirect(303, '/login/code');
    }
    // The account's own sign-in is its password alone; the provider's, moments ago, may have shown a second factor.
    await this.signIn.complete(req, res, toWebUser(user), pending.secondFactor ? 'provider' : null);
    return this.finishLink(req, res, pending);
  }

  /** After the second step: the account is proven; one button links it. */
  @Get('link/finish')
  async finishPage(@Req() req: Request, @Res() res: Response) {
    const pending = this.pending(req);
    if (!pending) return this.expired(res);
    if (!this.provenBySignIn(req, pending)) return res.redirect(303, '/login/link');
    res.render('sso-link-finish', { title: `Link ${pending.providerName}`, pending, csrfToken: this.csrf.tokenFor(req) });
  }

  @Post('link/finish')
  @HttpCode(200)
  async finish(@Req() req: Request, @Res() res: Response) {
    const pending = this.pending(req);
    if (!pending) return this.expired(res);
    if (!this.csrf.isValid(req) || !this.provenBySignIn(req, pending)) return res.redirect(303, '/login/link');
    return this.finishLink(req, res, pending);
  }

  /** The proof by mail: a link to the address, usable in this browser only. */
  @Post('link/mail')
  @HttpCode(200)
  async mailLink(@Req() req: Request, @Res() res: Response) {
    const pending = this.pending(req);
    if (!pending) return this.expired(res);
    if (!this.csrf.isValid(req)) return this.renderLink(req, res, 403, pending, 'Your form expired. Please try again.');
    try {
      pending.mail = { hash: await this.federation.mailProof(pending), at: this.clock.now().getTime() };
    } catch (err) {
      if (!(err instanceof FederationRefused)) throw err;
      return this.renderLink(req, res, err.status, pending, err.message);
    }
    req.session.pendingFederatedLink = pending;
    await saveSession(req);
    res.render('sso-link-sent', { title: 'Check your e-mail', pending, minutes: PENDING_LINK_MINUTES });
  }

  /** The mailed link opens a page (a scanner that follows it does nothing); its form links. */
  @Get('link/confirm')
  linkConfirmPage(@Req() req: Request, @Res() res: Response) {
    const token = queryParam(req, 'token');
    const pending = req.session.pendingFederatedLink;
    if (!this.federation.mailedProofMatches(pending, token)) return this.unusableMailedLink(res);
    res.render('sso-link-confirm', { title: `Link ${pending.providerName}`, pending, token, csrfToken: this.csrf.tokenFor(req) });
  }

  @Post('link/confirm')
  @HttpCode(200)
  async linkConfirm(@Req() req: Request, @Res() res: Response) {
    const pending = req.session.pendingFederatedLink;
    if (!this.federation.mailedProofMatches(pending, field(req, 'token'))) return this.unusableMailedLink(res);
    if (!this.csrf.isValid(req)) return res.redirect(303, `/login/link/confirm?token=${encodeURIComponent(field(req, 'token'))}`);
    let via: FederatedSignIn;
    try {
      via = await this.federation.linkByMailedProof(pending, req.ip ?? null);
    } catch (err) {
      return this.refusalPage.render(req, res, err, pending.providerId, pending.providerName);
    }
    delete req.session.pendingFederatedLink;
    const user = await this.users.findById(pending.userId);
    if (!user) return this.expired(res);
    await this.signIn.complete(req, res, toWebUser(user), pending.secondFactor ? 'provider' : null, via);
    req.session.notice = `${pending.providerName} is linked to your account. Everything set up on it before was ended: set a new password and second factor if you want them.`;
    await saveSession(req);
    res.redirect(303, pending.next);
  }

  /** Links the pending identity to the account this browser just signed in to; the session now counts as the provider's too. */
  private async finishLink(req: Request, res: Response, pending: PendingFederatedLink) {
    let via: FederatedSignIn;
    try {
      via = await this.federation.linkAfterSignIn(pending, req.ip ?? null);
    } catch (err) {
      delete req.session.pendingFederatedLink;
      await saveSession(req);
      return this.refusalPage.render(req, res, err, pending.providerId, pending.providerName);
    }
    delete req.session.pendingFederatedLink;
    req.session.federatedLinkId = via.linkId;
    req.session.notice = `${pending.providerName} is linked to your account: you can sign in with it from now on.`;
    await saveSession(req);
    res.redirect(303, pending.next);
  }

  /** The pending link of this browser, while it lasts. */
  private pending(req: Request): PendingFederatedLink | undefined {
    const pending = req.session.pendingFederatedLink;
    return this.federation.pendingUsable(pending) ? pending : undefined;
  }

  /** Signed in to the pending link's account by a sign-in that began after the provider's answer came. */
  private provenBySignIn(req: Request, pending: PendingFederatedLink): boolean {
    return req.webUser?.id === pending.userId && (req.session.signedInAt ?? 0) >= pending.at;
  }

  private async renderLink(req: Request, res: Response, status: number, pending: PendingFederatedLink, error?: string) {
    res.status(status).render('sso-link', {
      title: `Link ${pending.providerName}`,
      pending,
      error,
      hasPassword: await this.users.hasPassword(pending.userId),
      mailSent: pending.mail !== undefined,
      minutes: PENDING_LINK_MINUTES,
      csrfToken: this.csrf.tokenFor(req),
    });
  }

  private expired(res: Response) {
    const heading = 'Please sign in again';
    res.status(410).render('sso-refused', { title: heading, heading, message: `Linking waits ${PENDING_LINK_MINUTES} minutes at most, in the browser where it began. Please sign in with your provider again.` });
  }

  private unusableMailedLink(res: Response) {
    const heading = 'This link cannot be used here';
    res.status(410).render('sso-refused', {
      title: heading,
      heading,
      message: `A link to link your identity provider works once, for ${PENDING_LINK_MINUTES} minutes, and only in the browser where you signed in with the provider. Open it there, or sign in with the provider again.`,
    });
  }
}
