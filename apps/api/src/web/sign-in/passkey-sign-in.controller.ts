import { Controller, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import type { Request, Response } from 'express';
import { PasskeyRefused, PasskeysService } from '../../accounts/passkeys.service.js';
import { AuditService } from '../../audit/audit.service.js';
import { Public } from '../../auth/public.decorator.js';
import { AppConfig } from '../../config/app-config.js';
import { UsersService } from '../../users/users.service.js';
import { toWebUser } from '../../web-sessions/web-account.js';
import { DeviceCookies } from '../device-cookies.js';
import { field, safeNext } from '../form.js';
import { CsrfGuard, PageRefusalFilter } from '../page-guards.js';
import { PasskeyCeremonies } from './passkey-ceremonies.js';
import { SignInService } from '../sign-in.service.js';
import { webAuthnResponse, webAuthnSite } from '../webauthn-site.js';

/**
 * Signing in with a passkey alone, from the sign-in page: a discoverable credential names its
 * person, and its user verification (the device's PIN or biometrics) is the second factor.
 * The page's script calls these and follows `next`. Each sign-in is counted before its assertion
 * is verified (PasskeysService.authenticate): past the limit it is a 429 with Retry-After, and
 * neither verified nor audited. The challenge is kept sealed in the browser (PasskeyCeremonies):
 * asking for options stores nothing.
 */
@ApiExcludeController()
@Public()
@UseGuards(CsrfGuard)
@UseFilters(PageRefusalFilter)
@Controller('login/passkey')
export class PasskeySignInController {
  constructor(
    private readonly passkeys: PasskeysService,
    private readonly users: UsersService,
    private readonly signIn: SignInService,
    private readonly deviceCookies: DeviceCookies,
    private readonly audit: AuditService,
    private readonly config: AppConfig,
    private readonly ceremonies: PasskeyCeremonies,
  ) {}

  @Post('options')
  @HttpCode(200)
  async options(@Req() req: Request, @Res() res: Response) {
    const options = await this.passkeys.authenticationOptions(webAuthnSite(req, this.config));
    this.ceremonies.start(res, options.challenge);
    res.json(options);
  }

  @Post()
  @HttpCode(200)
  async signInWithPasskey(@Req() req: Request, @Res() res: Response) {
    const ceremony = this.ceremonies.take(req, res);
    const response = webAuthnResponse<AuthenticationResponseJSON>(req);
    const refuse = (message: string) => res.status(401).json({ statusCode: 401, error: 'unauthorized', message });
    if (!ceremony || !response) return refuse('That took too long or was already used: please try again.');
    let userId: string;
    try {
      const attempt = { ip: req.ip ?? '', browserFor: (ownerEmail: string) => this.deviceCookies.trustedFor(req, ownerEmail), challengeIssuedAt: new Date(ceremony.at) };
      userId = await this.passkeys.authenticate(response, ceremony.challenge, webAuthnSite(req, this.config), attempt);
    } catch (err) {
      if (!(err instanceof PasskeyRefused)) throw err;
      await this.audit.record('web.login_failed', { ip: req.ip, detail: { reason: 'passkey refused' } });
      return refuse(err.message);
    }
    const user = await this.users.findById(userId);
    if (!user || user.disabledAt) return refuse('This account cannot sign in: an administrator disabled it.');
    await this.signIn.complete(req, res, toWebUser(user), 'passkey');
    res.json({ next: safeNext(field(req, 'next'), this.config.publicUrl) });
  }
}
