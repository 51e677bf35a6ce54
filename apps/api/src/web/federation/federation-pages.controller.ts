import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { AppConfig } from '../../config/app-config.js';
import { FederatedSignInCompletion } from './federated-sign-in-completion.js';
import { FederationRefusalPage } from './federation-refusal-page.js';
import { queryParam, safeNext } from '../form.js';
import { FederationSignIn } from '../../federation/federation-sign-in.service.js';
import type { IdentityProviderRow } from '../../federation/identity-providers.service.js';
import type { ProviderIdentity } from '../../federation/relying-party.js';
import { type Flight, SignInFlights } from '../../federation/sign-in-flights.js';

/**
 * The browser's side of sign-in through a team's own OpenID provider (issue #34):
 * - `GET /login/sso/{id}`: off to the provider (state, nonce and PKCE in a sealed flight cookie);
 * - `GET /login/sso/{id}/callback`: the redirect URI; the provider's answer is checked against
 *   the flight, and signs in the linked account (or one made now, or asks for Prospect's own
 *   second factor when the provider showed none and the account has one), confirms sudo mode,
 *   or, for an address that has an account not linked yet, leads to proving it;
 * - `/login/link…`: proving that account in this same browser, by its password (and second
 *   factor) or by a link mailed to the address (federation-link-pages.controller.ts).
 * Refusals are pages that say why, audited with the reason (`federation.login_refused`:
 * federation-refusal-page.ts).
 */
@ApiExcludeController()
@Public()
@Controller('login')
export class FederationPagesController {
  constructor(
    private readonly federation: FederationSignIn,
    private readonly flights: SignInFlights,
    private readonly completion: FederatedSignInCompletion,
    private readonly refusalPage: FederationRefusalPage,
    private readonly config: AppConfig,
  ) {}

  /** "Continue with …": off to the provider. A GET (a link), as the page's CSP sends forms only to us. */
  @Get('sso/:id')
  async start(@Req() req: Request, @Res() res: Response, @Param('id') id: string) {
    const next = safeNext(queryParam(req, 'next'), this.config.publicUrl);
    const loginHint = queryParam(req, 'login_hint').slice(0, 320) || undefined;
    try {
      res.redirect(303, await this.federation.begin(res, id, 'sign-in', { next, loginHint }));
    } catch (err) {
      return this.refusalPage.render(req, res, err, id);
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
      if (flight!.purpose === 'sudo') return await this.completion.confirmSudo(req, res, flight!, answer.provider, answer.identity);
      return await this.signInWith(req, res, flight!, answer.provider, answer.identity);
    } catch (err) {
      return this.refusalPage.render(req, res, err, id);
    }
  }

  private async signInWith(req: Request, res: Response, flight: Flight, provider: IdentityProviderRow, identity: ProviderIdentity) {
    const outcome = await this.federation.signIn(provider, identity, req.ip ?? null);
    await this.completion.finish(req, res, outcome, provider.displayName, flight.next);
  }
}
