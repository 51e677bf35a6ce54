import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { SecondFactorsService } from '../../accounts/second-factors.service.js';
import { AuditService } from '../../audit/audit.service.js';
import { Clock } from '../../common/clock.js';
import { sha256 } from '../../common/secrets.js';
import { FederationRefused, FederationSignIn, type SignInOutcome } from '../../federation/federation-sign-in.service.js';
import type { IdentityProviderRow } from '../../federation/identity-providers.service.js';
import { showsSecondFactor } from '../../federation/provider-claims.js';
import type { ProviderIdentity } from '../../federation/relying-party.js';
import { amrOfSignIn, recordReconfirmation } from '../../web-sessions/session-proof.js';
import { regenerateSession, saveSession, toWebUser } from '../../web-sessions/web-account.js';
import { SignInService } from '../sign-in.service.js';

/**
 * How a sign-in through a provider ends in the browser, whatever its protocol (OpenID Connect:
 * federation-pages.controller.ts; SAML: saml-pages.controller.ts): an account to prove first
 * (/login/link, kept in this session only), Prospect's own second factor when the provider showed
 * none and the account has one (/login/code), or signed in (SignInService.complete, audited);
 * and how sudo mode's fresh sign-in there counts (confirmSudo).
 */
@Injectable()
export class FederatedSignInCompletion {
  constructor(
    private readonly signIn: SignInService,
    private readonly factors: SecondFactorsService,
    private readonly federation: FederationSignIn,
    private readonly audit: AuditService,
    private readonly clock: Clock,
  ) {}

  /**
   * Sudo mode's fresh sign-in at a provider: it counts only in the session that asked (`asked`:
   * its person and the hash of its session id, from the sealed flight) and only for the identity
   * linked to that person; then sudo mode, its proof recorded, audited, and on to `asked.next`.
   * @throws FederationRefused
   */
  async confirmSudo(req: Request, res: Response, asked: { userId?: string; session?: string; next: string }, provider: IdentityProviderRow, identity: ProviderIdentity): Promise<void> {
    const user = req.webUser;
    if (!user || user.id !== asked.userId || !req.sessionID || sha256(req.sessionID).toString('base64url') !== asked.session) {
      throw new FederationRefused('sudo answer outside the session that asked', 'That confirmation was started in another session. Please confirm again.', 400, asked.userId ?? null);
    }
    const via = await this.federation.confirmSudo(provider, identity, user.id);
    req.session.sudoAt = req.session.reconfirmedAt = this.clock.now().getTime();
    recordReconfirmation(req, amrOfSignIn(showsSecondFactor(identity.amr, identity.acr, provider.mfaAcrValues) ? 'provider' : null, true));
    await saveSession(req);
    await this.audit.record('web.sudo', { userId: user.id, ip: req.ip, detail: { with: 'provider', label: via.providerName, providerId: via.providerId } });
    res.redirect(303, asked.next);
  }

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
