import { SamlSignIn } from '../../federation/saml/saml-sign-in.service.js';
import { recordReconfirmation } from '../../web-sessions/session-proof.js';
import { Controller, Get, HttpCode, Param, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { saveSession } from '../../web-sessions/web-account.js';
import { AccountService, WrongPasswordError } from '../../accounts/account.service.js';
import { SecondFactorsService, WrongCodeError } from '../../accounts/second-factors.service.js';
import { AuditService } from '../../audit/audit.service.js';
import { Public } from '../../auth/public.decorator.js';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { TooManyRequests } from '../../rate-limits/rate-limits.js';
import { signedInBrowser } from '../device-cookies.js';
import { field, queryParam, safeNext } from '../form.js';
import { AllowsWithoutSecondFactor, CsrfGuard, PageRefusalFilter, SignedInGuard } from '../page-guards.js';
import { SudoPages } from '../sudo-pages.js';
import { FederationPolicy } from '../../federation/federation-policy.js';
import { FederationRefused, FederationSignIn } from '../../federation/federation-sign-in.service.js';

/**
 * Sudo mode: the signed-in person confirms who they are (password, or a code), and goes back where
 * they were. Both are counted against this signed-in session (signedInBrowser), never against the
 * account: failed sign-ins elsewhere never make the owner's right password or code a 429 here.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@AllowsWithoutSecondFactor()
@UseFilters(PageRefusalFilter)
@Controller('sudo')
export class SudoPageController {
  constructor(
    private readonly account: AccountService,
    private readonly factors: SecondFactorsService,
    private readonly pages: SudoPages,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly federation: FederationSignIn,
    private readonly policy: FederationPolicy,
    private readonly saml: SamlSignIn,
  ) {}

  /**
   * Confirms through an identity provider linked to the person: a fresh sign-in there
   * (`prompt=login`, `max_age=0`), whose answer (/login/sso/{id}/callback) counts only in this
   * session and only for the identity linked to this person. A link, as the page's CSP sends
   * forms only to us.
   */
  @Get('sso/:id')
  async confirmWithProvider(@Req() req: Request, @Res() res: Response, @Param('id') id: string) {
    const next = safeNext(queryParam(req, 'next'), this.config.publicUrl);
    const user = req.webUser!;
    const linked = (await this.policy.linkedProviders(user.id)).find((p) => p.id === id);
    if (!linked) {
      return this.pages.render(req, res, 403, next, 'Your account is not linked to that identity provider: confirm another way.');
    }
    try {
      const options = { next, userId: user.id, sessionId: req.sessionID };
      // An organization's SAML connection (issue #47): ForceAuthn at its IdP, the answer back through its ACS.
      res.redirect(303, linked.protocol === 'saml' ? await this.saml.beginSudo(res, id, options) : await this.federation.begin(res, id, 'sudo', options));
    } catch (err) {
      if (!(err instanceof FederationRefused)) throw err;
      return this.pages.render(req, res, err.status, next, err.message);
    }
  }

  /** The same question asked from a link (a page's script sends the person here). */
  @Get()
  ask(@Req() req: Request, @Res() res: Response) {
    return this.pages.render(req, res, 200, safeNext(queryParam(req, 'next'), this.config.publicUrl));
  }

  @Post()
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async confirm(@Req() req: Request, @Res() res: Response) {
    const next = safeNext(field(req, 'next'), this.config.publicUrl);
    const user = req.webUser!;
    const code = field(req, 'code').trim();
    // A domain a provider enforces confirms there, as it signs in there (issue #34).
    const provider = await this.policy.enforcingProviderFor(user.email);
    if (provider) return this.pages.render(req, res, 403, next, `Your address signs in with ${provider.displayName}: confirm with ${provider.displayName}.`);
    try {
      // A code, when one is given (and the person has an app); else the password.
      const browser = signedInBrowser(req);
      if (code) await this.factors.verify(user, code, req.ip ?? null, browser);
      else await this.account.checkPassword(user.email, field(req, 'password'), req.ip ?? null, browser);
    } catch (err) {
      if (err instanceof WrongPasswordError) return this.pages.render(req, res, 401, next, 'That password is not right.');
      if (err instanceof WrongCodeError) return this.pages.render(req, res, 401, next, 'That code is not right, or was used already.');
      if (err instanceof TooManyRequests) {
        res.set('Retry-After', String(err.retryAfterSeconds));
        return this.pages.render(req, res, 429, next, err.message);
      }
      throw err;
    }
    req.session.sudoAt = req.session.reconfirmedAt = this.clock.now().getTime();
    recordReconfirmation(req, code ? ['otp'] : ['pwd']);
    await saveSession(req);
    await this.audit.record('web.sudo', { userId: user.id, ip: req.ip, detail: { with: code ? 'code' : 'password' } });
    res.redirect(303, next);
  }
}
