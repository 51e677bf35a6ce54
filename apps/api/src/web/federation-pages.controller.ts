import { Controller, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { SecondFactorsService } from '../accounts/second-factors.service.js';
import { AuditService } from '../audit/audit.service.js';
import { Public } from '../auth/public.decorator.js';
import { Clock } from '../common/clock.js';
import { sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { RateLimits, TooManyRequests } from '../rate-limits/rate-limits.js';
import { UsersService } from '../users/users.service.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import { type FederatedSignIn, type PendingFederatedLink, regenerateSession, saveSession, toWebUser } from '../web-sessions/web-account.js';
import { DeviceCookies } from './device-cookies.js';
import { field, queryParam, safeNext } from './form.js';
import { SignInService } from './sign-in.service.js';
import { AnonymousRefusals } from '../federation/anonymous-refusals.js';
import { PENDING_LINK_MINUTES } from '../federation/federation-policy.js';
import { FederationRefused, FederationSignIn } from '../federation/federation-sign-in.service.js';
import type { IdentityProviderRow } from '../federation/identity-providers.service.js';
import type { ProviderIdentity } from '../federation/relying-party.js';
import { type Flight, SignInFlights } from '../federation/sign-in-flights.js';

/** Where the second step of a sign-in goes after the password proved the account to link. */
const FINISH_LINK = '/login/link/finish';

/**
 * The browser's side of sign-in through a team's own OpenID provider (issue #34):
 * - `GET /login/sso/{id}`: off to the provider (state, nonce and PKCE in a sealed flight cookie);
 * - `GET /login/sso/{id}/callback`: the redirect URI; the provider's answer is checked against
 *   the flight, and signs in the linked account (or one made now, or asks for Prospect's own
 *   second factor when the provider showed none and the account has one), confirms sudo mode,
 *   or, for an address that has an account not linked yet, leads to proving it;
 * - `/login/link…`: proving that account in this same browser, by its password (and second
 *   factor) or by a link mailed to the address.
 * Refusals are pages that say why, audited with the reason (`federation.login_refused`).
 */
@ApiExcludeController()
@Public()
@Controller('login')
export class FederationPagesController {
  constructor(
    private readonly federation: FederationSignIn,
    private readonly flights: SignInFlights,
    private readonly signIn: SignInService,
    private readonly factors: SecondFactorsService,
    private readonly users: UsersService,
    private readonly deviceCookies: DeviceCookies,
    private readonly limits: RateLimits,
    private readonly csrf: CsrfService,
    private readonly audit: AuditService,
    private readonly anonymousRefusals: AnonymousRefusals,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  // ── proving an existing account ─────────────────────────────────────────────────────────────

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
    const browser = this.deviceCookies.trustedFor(req, pending.email);
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
      return this.refused(req, res, err, pending.providerId, pending.providerName);
    }
    delete req.session.pendingFederatedLink;
    const user = await this.users.findById(pending.userId);
    if (!user) return this.expired(res);
    await this.signIn.complete(req, res, toWebUser(user), pending.secondFactor ? 'provider' : null, via);
    req.session.notice = `${pending.providerName} is linked to your account. Everything set up on it before was ended: set a new password and second factor if you want them.`;
    await saveSession(req);
    res.redirect(303, pending.next);
  }

  // ── the provider ────────────────────────────────────────────────────────────────────────────

  /** "Continue with …": off to the provider. A GET (a link), as the page's CSP sends forms only to us. */
  @Get('sso/:id')
  async start(@Req() req: Request, @Res() res: Response, @Param('id') id: string) {
    const next = safeNext(queryParam(req, 'next'), this.config.publicUrl);
    const loginHint = queryParam(req, 'login_hint').slice(0, 320) || undefined;
    try {
      res.redirect(303, await this.federation.begin(res, id, 'sign-in', { next, loginHint }));
    } catch (err) {
      return this.refused(req, res, err, id);
    }
  }

  /** The redirect URI registered at the provider. */
  @Get('sso/:id/callback')
  async callback(@Req() req: Request, @Res() res: Response, @Param('id') id: string) {
    const flight = this.flights.take(req, res);
    const query = req.originalUrl.indexOf('?');
    const callbackUrl = new URL(this.federation.redirectUri(id) + (query >= 0 ? req.originalUrl.slice(query) : ''));
    let answer: { provider: IdentityProviderRow; identity: ProviderIdentity };
    try {
      answer = await this.federation.answer(id, flight, callbackUrl);
      if (flight!.purpose === 'sudo') return await this.confirmSudo(req, res, flight!, answer.provider, answer.identity);
      return await this.signInWith(req, res, flight!, answer.provider, answer.identity);
    } catch (err) {
      return this.refused(req, res, err, id);
    }
  }

  private async signInWith(req: Request, res: Response, flight: Flight, provider: IdentityProviderRow, identity: ProviderIdentity) {
    const outcome = await this.federation.signIn(provider, identity, req.ip ?? null);
    const now = this.clock.now().getTime();
    if (outcome.kind === 'proof-needed') {
      // Kept in this browser's session only (a new id, as any step of a sign-in gets): nothing persistent before the proof.
      await regenerateSession(req);
      req.session.pendingFederatedLink = { ...outcome.pending, at: now, next: flight.next };
      await saveSession(req);
      return res.redirect(303, '/login/link');
    }
    const { user, via } = outcome;
    // The provider showed no second factor, and the account has one of its own: it is asked for, as after a password.
    if (!outcome.secondFactor && (await this.factors.hasAny(user.id))) {
      await regenerateSession(req);
      req.session.pendingSignIn = { userId: user.id, at: now, next: flight.next, credentialEpoch: user.credentialEpoch, federated: via };
      await saveSession(req);
      return res.redirect(303, '/login/code');
    }
    await this.signIn.complete(req, res, toWebUser(user), outcome.secondFactor ? 'provider' : null, via);
    if (outcome.created) {
      req.session.notice = `Welcome to Prospect: your account was made with ${provider.displayName}, which you sign in with. It has no password.`;
      await saveSession(req);
    }
    res.redirect(303, flight.next);
  }

  /** Sudo mode's fresh sign-in: in the session that asked, of the identity linked to its person. */
  private async confirmSudo(req: Request, res: Response, flight: Flight, provider: IdentityProviderRow, identity: ProviderIdentity) {
    const user = req.webUser;
    if (!user || user.id !== flight.userId || !req.sessionID || sha256(req.sessionID).toString('base64url') !== flight.session) {
      throw new FederationRefused('sudo answer outside the session that asked', 'That confirmation was started in another session. Please confirm again.', 400, flight.userId ?? null);
    }
    const via = await this.federation.confirmSudo(provider, identity, user.id);
    req.session.sudoAt = this.clock.now().getTime();
    await saveSession(req);
    await this.audit.record('web.sudo', { userId: user.id, ip: req.ip, detail: { with: 'provider', label: via.providerName, providerId: via.providerId } });
    res.redirect(303, flight.next);
  }

  /** Links the pending identity to the account this browser just signed in to; the session now counts as the provider's too. */
  private async finishLink(req: Request, res: Response, pending: PendingFederatedLink) {
    let via: FederatedSignIn;
    try {
      via = await this.federation.linkAfterSignIn(pending, req.ip ?? null);
    } catch (err) {
      delete req.session.pendingFederatedLink;
      await saveSession(req);
      return this.refused(req, res, err, pending.providerId, pending.providerName);
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

  /**
   * A refusal as a page, audited with its reason: at once when it concerns a person or an identity
   * the provider vouched for; counted (AnonymousRefusals) when anyone could cause it for free.
   */
  private async refused(req: Request, res: Response, err: unknown, providerId: string, providerName?: string) {
    if (!(err instanceof FederationRefused)) throw err;
    const label = providerName ?? (await this.federation.knownProviderName(providerId)) ?? 'an unknown provider';
    if (err.identified) {
      await this.audit.record('federation.login_refused', {
        userId: err.userId,
        ip: req.ip,
        detail: { reason: err.reason, label, providerId: providerId.slice(0, 64), browser: req.get('user-agent')?.slice(0, 200) ?? null },
      });
    } else {
      this.anonymousRefusals.count(req.ip, providerId.slice(0, 64), err.reason);
    }
    const heading = err.status === 502 ? `Sign-in with ${label} is not working` : 'Sign-in refused';
    res.status(err.status).render('sso-refused', { title: heading, heading, message: err.message });
  }
}
