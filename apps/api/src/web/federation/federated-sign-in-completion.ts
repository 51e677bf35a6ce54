import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { SecondFactorsService } from '../../accounts/second-factors.service.js';
import { Clock } from '../../common/clock.js';
import type { SignInOutcome } from '../../federation/federation-sign-in.service.js';
import { regenerateSession, saveSession, toWebUser } from '../../web-sessions/web-account.js';
import { SignInService } from '../sign-in.service.js';

/**
 * How a sign-in through a provider ends in the browser, whatever its protocol (OpenID Connect:
 * federation-pages.controller.ts; SAML: saml-pages.controller.ts): an account to prove first
 * (/login/link, kept in this session only), Prospect's own second factor when the provider showed
 * none and the account has one (/login/code), or signed in (SignInService.complete, audited).
 */
@Injectable()
export class FederatedSignInCompletion {
  constructor(
    private readonly signIn: SignInService,
    private readonly factors: SecondFactorsService,
    private readonly clock: Clock,
  ) {}

  async finish(req: Request, res: Response, outcome: SignInOutcome, providerName: string, next: string): Promise<void> {
    const now = this.clock.now().getTime();
    if (outcome.kind === 'proof-needed') {
      // Kept in this browser's session only (a new id, as any step of a sign-in gets): nothing persistent before the proof.
      await regenerateSession(req);
      req.session.pendingFederatedLink = { ...outcome.pending, at: now, next };
      await saveSession(req);
      return res.redirect(303, '/login/link');
    }
    const { user, via } = outcome;
    // The provider showed no second factor, and the account has one of its own: it is asked for, as after a password.
    if (!outcome.secondFactor && (await this.factors.hasAny(user.id))) {
      await regenerateSession(req);
      req.session.pendingSignIn = { userId: user.id, at: now, next, credentialEpoch: user.credentialEpoch, federated: via };
      await saveSession(req);
      return res.redirect(303, '/login/code');
    }
    await this.signIn.complete(req, res, toWebUser(user), outcome.secondFactor ? 'provider' : null, via);
    if (outcome.created) {
      req.session.notice = `Welcome to Prospect: your account was made with ${providerName}, which you sign in with. It has no password.`;
      await saveSession(req);
    }
    res.redirect(303, next);
  }
}
