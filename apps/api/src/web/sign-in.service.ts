import { amrOfSignIn, showsSecondFactor, type SignInFactor } from '../web-sessions/session-proof.js';
import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { SessionData } from 'express-session';
import passport from 'passport';
import { ERROR_CODES } from '@prospect/contract';
import { ApiException } from '../common/api-exception.js';
import { AuditService } from '../audit/audit.service.js';
import { AppConfig } from '../config/app-config.js';
import { Clock } from '../common/clock.js';
import { UsersService } from '../users/users.service.js';
import type { FederatedSignIn, WebUser } from '../web-sessions/web-account.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { FederationPolicy, SignInThroughProviderRequired } from '../federation/federation-policy.js';
import { DeviceCookies } from './device-cookies.js';

/** The account changed (a new password, address, a disable, a deletion) between the check of this sign-in's credentials and its end: it signs no one in. */
export class AccountChangedDuringSignIn extends ApiException {
  constructor() {
    super(409, ERROR_CODES.conflict, 'Your account changed while you were signing in. Please sign in again.');
  }
}

/**
 * Passport's sign-in and sign-out as promises, so the page controllers can answer a
 * failed sign-in with the form again (AuthGuard('local') would throw a 401 first).
 */
@Injectable()
export class SignInService {
  constructor(
    private readonly sessions: WebSessions,
    private readonly deviceCookies: DeviceCookies,
    private readonly audit: AuditService,
    private readonly users: UsersService,
    private readonly config: AppConfig,
    private readonly federation: FederationPolicy,
    private readonly clock: Clock,
  ) {}

  /** The person these form fields sign in, or null (passport-local, LocalStrategy). */
  checkCredentials(req: Request, res: Response): Promise<WebUser | null> {
    return new Promise((resolve, reject) =>
      passport.authenticate('local', { session: false }, (err: unknown, user: WebUser | false) => (err ? reject(err) : resolve(user || null)))(req, res, reject),
    );
  }

  /**
   * The end of a sign-in with a password, a passkey or through an identity provider (and the
   * second factor, when one is asked for): this browser is trusted for the account (device
   * cookie), the session starts, the sign-in is audited with the browser and recorded for the
   * admin list. With REQUIRE_SECOND_FACTOR, a person without one is led to set it up.
   *
   * `federated`: the provider link this sign-in came through, or the half-signed-in state's
   * (a provider's sign-in that went on to ask for Prospect's own factor). A sign-in not through a
   * provider is refused for an address whose domain a provider enforces (issue #34), unless it is
   * the proof that links that provider to this account (its pending link, in this browser).
   * `secondFactor` 'provider': the provider's amr/acr showed one.
   * @throws ApiException 403 (SignInThroughProviderRequired) for such a sign-in.
   */
  async complete(req: Request, res: Response, user: WebUser, secondFactor: SignInFactor, federated?: FederatedSignIn): Promise<void> {
    // A half-finished sign-in left in this browser belongs to its person: another person's
    // sign-in here discards it, and never inherits the provider it came through (issue #43).
    if (req.session.pendingSignIn && req.session.pendingSignIn.userId !== user.id) delete req.session.pendingSignIn;
    const via = federated ?? req.session.pendingSignIn?.federated;
    if (!via && !this.federation.provesPendingLink(req.session.pendingFederatedLink, user.id, this.clock.now())) {
      const provider = await this.federation.enforcingProviderFor(user.email);
      if (provider) {
        await this.audit.record('federation.login_refused', { userId: user.id, ip: req.ip, detail: { reason: 'sign-in without the enforcing provider', label: provider.displayName, providerId: provider.id } });
        throw new SignInThroughProviderRequired(user.email, provider);
      }
    }
    await this.logIn(req, res, user, { amr: amrOfSignIn(secondFactor, via !== undefined), federated: via, checkedUnder: user.credentialEpoch });
    const browser = req.get('user-agent')?.slice(0, 200) ?? null;
    const factor: Record<string, string> = secondFactor ? { secondFactor } : {};
    if (via) await this.audit.record('federation.login', { userId: user.id, ip: req.ip, userAgent: req.get('user-agent'), organizationId: via.organizationId ?? null, detail: { browser, label: via.providerName, providerId: via.providerId, linkId: via.linkId, ...factor } });
    else await this.audit.record('web.login', { userId: user.id, ip: req.ip, userAgent: req.get('user-agent'), detail: { browser, ...factor } });
    await this.users.recordSignIn(user.id);
  }

  /**
   * The first sign-in of an account just made (a sign-up, an accepted invitation): the session
   * starts and, as for every other sign-in (complete), the admin list's "last sign-in" is recorded.
   * A browser signed in again after a change of its own credentials (signInAgain) is no new sign-in.
   */
  async firstSignIn(req: Request, res: Response, user: WebUser): Promise<void> {
    await this.logIn(req, res, user, { amr: amrOfSignIn(null, false) });
    await this.users.recordSignIn(user.id);
  }

  /**
   * Signs this browser in again after its person changed their own password or address, which
   * ended every session of the account, this one too: under the account's new state, as the same
   * sign-in it was. When and how it began carry over (its lifetime, its sudo mode and
   * re-confirmation, the provider link it came through, a factor still to set up), so the change
   * neither renews the session nor unbinds it from its provider.
   */
  async signInAgain(req: Request, res: Response, user: WebUser): Promise<void> {
    const { signedInAt, sudoAt, reconfirmedAt, federatedLinkId, mustEnrolSecondFactor, proofAmr, secondFactorShown } = req.session;
    await this.logIn(req, res, user, { amr: proofAmr ?? [], carryOver: { signedInAt, sudoAt, reconfirmedAt, federatedLinkId, mustEnrolSecondFactor, proofAmr, secondFactorShown } });
  }

  /**
   * Signs the person in: passport regenerates the session id and saves the session
   * before the redirect is sent, so the moment of sign-in (where the absolute lifetime
   * starts) must be in it already: a browser follows the redirect as soon as it has
   * the headers. The anonymous session's CSRF token is not carried over. The session records
   * the account's credential epoch, and ends when it moves on (session.serializer.ts); so does the
   * device cookie this browser gets for the account (web/device-cookies.ts), which keeps the
   * browser of a person who just changed their own password or address recognised. With
   * REQUIRE_SECOND_FACTOR, a sign-in without one leads every page to setting it up. A sign-in
   * through an identity provider records its link (`federatedLinkId`), and the session ends when
   * the provider refuses the person or is disabled; any other sign-in records none.
   */
  private async logIn(
    req: Request,
    res: Response,
    user: WebUser,
    options: {
      /** How the person proved who they are (RFC 8176; session-proof.ts). */
      amr: string[];
      federated?: FederatedSignIn;
      /** The account's epoch when this sign-in's credentials were checked: a sign-in that raced a change of the account fails. */
      checkedUnder?: number;
      carryOver?: Pick<SessionData, 'signedInAt' | 'sudoAt' | 'reconfirmedAt' | 'federatedLinkId' | 'mustEnrolSecondFactor' | 'proofAmr' | 'secondFactorShown'>;
    },
  ): Promise<void> {
    // The epoch as it is now, not as the caller read it: a caller that just changed the password
    // signs its own browser in again under the new one.
    const current = await this.users.findById(user.id);
    if (!current || current.disabledAt || (options.checkedUnder !== undefined && current.credentialEpoch !== options.checkedUnder)) throw new AccountChangedDuringSignIn();
    this.sessions.startSignedInSession(req, current.credentialEpoch, options.amr);
    this.deviceCookies.issue(res, current);
    if (options.carryOver) {
      Object.assign(req.session, options.carryOver);
    } else {
      if (options.federated) req.session.federatedLinkId = options.federated.linkId;
      else delete req.session.federatedLinkId;
      if (this.config.requireSecondFactor && !showsSecondFactor(options.amr)) req.session.mustEnrolSecondFactor = true;
    }
    await new Promise<void>((resolve, reject) => req.logIn(user, { session: true, keepSessionInfo: true }, (err) => (err ? reject(err) : resolve())));
  }

  /** Ends the session: its row is deleted, and the browser gets a fresh anonymous one. */
  async logOut(req: Request): Promise<void> {
    await new Promise<void>((resolve, reject) => req.logOut((err) => (err ? reject(err) : resolve())));
  }
}
