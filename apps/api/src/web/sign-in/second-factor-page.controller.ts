import { Controller, Get, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { PasskeyRefused, PasskeysService } from '../../accounts/passkeys.service.js';
import { SecondFactorsService, WrongCodeError } from '../../accounts/second-factors.service.js';
import { AppConfig } from '../../config/app-config.js';
import { webAuthnResponse, webAuthnSite } from '../webauthn-site.js';
import { Public } from '../../auth/public.decorator.js';
import { AuditService } from '../../audit/audit.service.js';
import { Clock } from '../../common/clock.js';
import { TooManyRequests } from '../../rate-limits/rate-limits.js';
import { UsersService } from '../../users/users.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { toWebUser, saveSession } from '../../web-sessions/web-account.js';
import { field } from '../form.js';
import { DeviceCookies } from '../device-cookies.js';
import { CsrfGuard, PageRefusalFilter } from '../page-guards.js';
import { SignInService } from '../sign-in.service.js';

/** How long the half-signed-in state (password right, code not yet given) lasts. */
export const PENDING_SIGN_IN_SECONDS = 5 * 60;

/**
 * The second step of a sign-in for people with a second factor: the app's code, a recovery code, or
 * a passkey. A browser with a device cookie for the account is the owner's (it signed in before):
 * its codes are counted apart from everyone else's (rate-limits.ts), so people who know the
 * password and guess codes never make the owner's right code a 429 there.
 */
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
    private readonly passkeys: PasskeysService,
    private readonly deviceCookies: DeviceCookies,
    private readonly config: AppConfig,
  ) {}

  @Get()
  async page(@Req() req: Request, @Res() res: Response) {
    if (!this.pending(req)) return res.redirect(303, '/login?code=expired');
    await this.render(req, res, 200);
  }

  /** The second step with one of the person's passkeys (the page's script; JSON answers). */
  @Post('passkey/options')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async passkeyOptions(@Req() req: Request, @Res() res: Response) {
    const pending = this.pending(req);
    if (!pending) return res.status(401).json({ statusCode: 401, error: 'unauthorized', message: 'That sign-in waited too long. Please sign in again.', next: '/login?code=expired' });
    const options = await this.passkeys.authenticationOptions(webAuthnSite(req, this.config), pending.userId);
    req.session.passkeyChallenge = options.challenge;
    res.json(options);
  }

  @Post('passkey')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async passkey(@Req() req: Request, @Res() res: Response) {
    const { pending, user } = await this.pendingAccount(req);
    const challenge = req.session.passkeyChallenge;
    delete req.session.passkeyChallenge;
    const response = webAuthnResponse<AuthenticationResponseJSON>(req);
    const refuse = (message: string) => res.status(401).json({ statusCode: 401, error: 'unauthorized', message });
    if (!pending || !user || !challenge || !response) return refuse('That took too long or was already used: please sign in again.');
    try {
      await this.passkeys.authenticate(response, challenge, webAuthnSite(req, this.config), { ip: req.ip ?? '', browserFor: () => this.deviceCookies.trustedFor(req, user.email) }, user.id);
    } catch (err) {
      if (!(err instanceof PasskeyRefused)) throw err;
      await this.audit.record('web.login_failed', { userId: user.id, ip: req.ip, detail: { reason: 'passkey refused' } });
      return refuse(err.message);
    }
    await this.signIn.complete(req, res, toWebUser(user), 'passkey');
    res.json({ next: pending.next });
  }

  @Post()
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async verify(@Req() req: Request, @Res() res: Response) {
    const { pending, user } = await this.pendingAccount(req);
    if (!pending || !user) {
      delete req.session.pendingSignIn;
      return res.redirect(303, '/login?code=expired');
    }
    let used;
    try {
      used = await this.factors.verify(user, field(req, 'code'), req.ip ?? null, await this.deviceCookies.trustedFor(req, user.email));
    } catch (err) {
      if (err instanceof WrongCodeError) {
        await this.audit.record('web.login_failed', { userId: user.id, ip: req.ip, detail: { reason: 'wrong second-factor code' } });
        return await this.render(req, res, 401, 'That code is not right, or was used already. Codes change every 30 seconds.');
      }
      if (err instanceof TooManyRequests) {
        res.set('Retry-After', String(err.retryAfterSeconds));
        return await this.render(req, res, 429, err.message);
      }
      throw err;
    }
    await this.signIn.complete(req, res, toWebUser(user), used);
    if (used === 'recovery-code') {
      req.session.notice = 'You signed in with a recovery code: it no longer works. If your phone is lost, set up the app again and make new codes.';
      await saveSession(req);
    }
    res.redirect(303, pending.next);
  }

  /** The half-signed-in state of this session, unless it is too old. */
  private pending(req: Request) {
    const pending = req.session.pendingSignIn;
    if (pending && this.clock.now().getTime() - pending.at <= PENDING_SIGN_IN_SECONDS * 1000) return pending;
    return undefined;
  }

  /**
   * The half-signed-in state and its account, while the account is enabled and in the state the
   * password step saw (its credential epoch): a password changed or reset since ends it.
   */
  private async pendingAccount(req: Request) {
    const pending = this.pending(req);
    const user = pending && (await this.users.findById(pending.userId));
    if (!pending || !user || user.disabledAt || user.credentialEpoch !== (pending.credentialEpoch ?? 0)) return { pending: undefined, user: undefined };
    return { pending, user };
  }

  private async render(req: Request, res: Response, status: number, error?: string) {
    const userId = req.session.pendingSignIn!.userId;
    const [hasTotp, hasPasskey] = await Promise.all([this.factors.hasTotp(userId), this.passkeys.has(userId)]);
    res.status(status).render('login-code', { title: hasTotp ? 'Enter your code' : 'Use your passkey', error, hasTotp, hasPasskey, passkeys: hasPasskey, csrfToken: this.csrf.tokenFor(req) });
  }
}
