import { recordEnrolledFactor } from '../../web-sessions/session-proof.js';
import { Controller, HttpCode, Param, ParseUUIDPipe, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { hasUnsafeText } from '@prospect/contract';
import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import type { Request, Response } from 'express';
import { saveSession } from '../../web-sessions/web-account.js';
import { PasskeyRefused, PasskeysService } from '../../accounts/passkeys.service.js';
import { Public } from '../../auth/public.decorator.js';
import { AppConfig } from '../../config/app-config.js';
import { field } from '../form.js';
import { AllowsWithoutSecondFactor, CsrfGuard, PageRefusalFilter, SignedInGuard, SudoGuard, VerifiedEmailGuard } from '../page-guards.js';
import { webAuthnResponse, webAuthnSite } from '../webauthn-site.js';

/** A passkey's name as the person typed it, or what the list calls it without one. */
function passkeyName(req: Request): string | undefined {
  const name = field(req, 'name').trim() || 'Passkey';
  return name.length <= 60 && !hasUnsafeText(name) ? name : undefined;
}

/**
 * Passkeys on /settings/security: the page's script asks for options, lets the browser make the
 * credential, and sends it back here (JSON answers); renaming and removing are plain forms.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@AllowsWithoutSecondFactor()
@UseFilters(PageRefusalFilter)
@Controller('settings/security/passkeys')
export class PasskeysPageController {
  constructor(
    private readonly passkeys: PasskeysService,
    private readonly config: AppConfig,
  ) {}

  @Post('options')
  @HttpCode(200)
  @UseGuards(CsrfGuard, VerifiedEmailGuard, SudoGuard)
  async options(@Req() req: Request, @Res() res: Response) {
    try {
      const options = await this.passkeys.registrationOptions(req.webUser!, webAuthnSite(req, this.config));
      req.session.passkeyChallenge = options.challenge;
      res.json(options);
    } catch (err) {
      if (!(err instanceof PasskeyRefused)) throw err;
      res.status(400).json({ statusCode: 400, error: 'invalid_request', message: err.message });
    }
  }

  @Post()
  @HttpCode(200)
  @UseGuards(CsrfGuard, VerifiedEmailGuard, SudoGuard)
  async register(@Req() req: Request, @Res() res: Response) {
    const challenge = req.session.passkeyChallenge;
    delete req.session.passkeyChallenge;
    const response = webAuthnResponse<RegistrationResponseJSON>(req);
    const name = passkeyName(req);
    const refuse = (message: string) => res.status(400).json({ statusCode: 400, error: 'invalid_request', message });
    if (!challenge) return refuse('That took too long or was already used: please try again.');
    if (!response) return refuse('The browser sent no passkey.');
    if (!name) return refuse('A passkey’s name is at most 60 characters, without control characters.');
    try {
      await this.passkeys.register(req.webUser!.id, response, challenge, webAuthnSite(req, this.config), name, req.ip ?? null);
    } catch (err) {
      if (err instanceof PasskeyRefused) return refuse(err.message);
      throw err;
    }
    // A passkey is a second factor: one who had to set one up is done.
    delete req.session.mustEnrolSecondFactor;
    recordEnrolledFactor(req);
    await saveSession(req);
    res.json({ next: '/settings/security?done=passkey-added' });
  }

  @Post(':id/rename')
  @UseGuards(CsrfGuard)
  async rename(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    const name = passkeyName(req);
    const renamed = name !== undefined && (await this.passkeys.rename(req.webUser!.id, id, name));
    res.redirect(303, `/settings/security?done=${renamed ? 'passkey-renamed' : 'passkey-name-refused'}`);
  }

  @Post(':id/remove')
  @UseGuards(CsrfGuard, SudoGuard)
  async remove(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    await this.passkeys.remove(req.webUser!.id, id, req.ip ?? null);
    res.redirect(303, '/settings/security?done=passkey-removed');
  }
}
