import { TokensService } from '../tokens/tokens.service.js';
import { Injectable } from '@nestjs/common';
import { TokenRevocations } from '../tokens/token-revocations.js';
import { AppConfig } from '../config/app-config.js';
import { FederationPolicy } from '../federation/federation-policy.js';
import { Mailer } from '../mail/mailer.js';
import { type RecognisedBrowser, RateLimits } from '../rate-limits/rate-limits.js';
import { hashPassword } from '../users/password.js';
import { OrganizationsService, SoleOwnerError } from '../organizations/organizations.service.js';
import { UsersService } from '../users/users.service.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { accountDeletedMail, passwordChangedMail } from './account-mails.js';

/** The current password given to change it was wrong. */
export class WrongPasswordError extends Error {}

/** The account is the only administrator's: another admin must exist first. */
export class LastAdminError extends Error {}

/** The account confirms changes through its identity provider (signInMethod): the change waits for a re-confirmation on the sudo page. */
export class ConfirmInSudoMode extends Error {}

/**
 * A password or address was to be changed for an account whose domain a provider enforces: the
 * provider manages both (no password signs in there, and moving the address out of the domain
 * would leave the provider's control, e.g. a person it has since disabled keeping their account).
 */
export class ManagedByProviderError extends Error {
  constructor(readonly providerName: string) {
    super(`the account's address and sign-in are managed by ${providerName}`);
  }
}

/**
 * How a person confirms a change of how they sign in (a new password, address, a deletion):
 * - `password`: the account's password, asked in the change's own form and counted like a sign-in;
 * - `sudo`: the account signs in only through an identity provider (it has no password, or its
 *   domain is one a provider enforces, where a password no longer signs in): the change is made
 *   just after re-confirming on the sudo page (a fresh sign-in at the provider, or a code), not on
 *   the strength of the sign-in alone (auth/sudo-rule.ts reconfirmedJustNow). `enforcedBy` names
 *   that provider.
 */
export type SignInMethod = { confirmsWith: 'password' } | { confirmsWith: 'sudo'; enforcedBy?: string };

/** What the person gave to confirm a change: the password typed in its form, and whether they re-confirmed on the sudo page a moment ago. */
export interface OwnerConfirmation {
  password: string;
  reconfirmedJustNow: boolean;
}

/** What a signed-in person changes about their own account on /settings/account. */
@Injectable()
export class AccountService {
  constructor(
    private readonly users: UsersService,
    private readonly limits: RateLimits,
    private readonly webSessions: WebSessions,
    private readonly mailer: Mailer,
    private readonly config: AppConfig,
    private readonly revocations: TokenRevocations,
    private readonly federation: FederationPolicy,
    private readonly tokens: TokensService,
    private readonly organizations: OrganizationsService,
  ) {}

  /** How this person confirms a change of how they sign in (SignInMethod). */
  async signInMethod(user: { id: string; email: string }): Promise<SignInMethod> {
    const enforcing = await this.federation.enforcingProviderFor(user.email);
    if (enforcing) return { confirmsWith: 'sudo', enforcedBy: enforcing.displayName };
    return (await this.users.hasPassword(user.id)) ? { confirmsWith: 'password' } : { confirmsWith: 'sudo' };
  }

  /**
   * confirmOwner for a change of the password or the address, which an account whose domain a
   * provider enforces does not make here.
   * @throws ManagedByProviderError, and what confirmOwner throws
   */
  async confirmManagedHere(user: { id: string; email: string }, confirmation: OwnerConfirmation, ip: string | null, browser: RecognisedBrowser | null): Promise<void> {
    const method = await this.signInMethod(user);
    if (method.confirmsWith === 'sudo' && method.enforcedBy) throw new ManagedByProviderError(method.enforcedBy);
    await this.confirmOwner(method, user, confirmation, ip, browser);
  }

  /**
   * Confirms that the signed-in person asking for a change of how they sign in is the owner, by
   * the account's sign-in method: its password (checkPassword), or a re-confirmation a moment ago
   * for an account that signs in only through a provider. A password is never taken where it no
   * longer signs in (a domain a provider enforces), the same rule as sign-in and the sudo page.
   * @throws WrongPasswordError, TooManyRequests, ConfirmInSudoMode
   */
  private async confirmOwner(method: SignInMethod, user: { email: string }, confirmation: OwnerConfirmation, ip: string | null, browser: RecognisedBrowser | null): Promise<void> {
    if (method.confirmsWith === 'password') return this.checkPassword(user.email, confirmation.password, ip, browser);
    if (!confirmation.reconfirmedJustNow) throw new ConfirmInSudoMode();
  }

  /** A new display name (validated by the caller), audited. */
  async rename(userId: string, name: string, ip: string | null): Promise<void> {
    await this.users.changeWithAudit(userId, { name }, 'account.rename', ip);
  }

  /**
   * A new password, given the current one (confirmOwner): a wrong current password is counted like
   * a failed sign-in (a stolen session must not become a way to guess the password). An account
   * without one (it signs in through a provider) sets its first just after re-confirming; none is set where a
   * provider enforces the domain. Every web session of the account ends (the caller signs this
   * browser in again), and so does every grant (CLI sessions, connected apps) approved under the old
   * password; the owner is told by mail. `browser`: the signed-in session asking.
   * @throws WrongPasswordError, TooManyRequests, ConfirmInSudoMode, ManagedByProviderError
   */
  async changePassword(user: { id: string; email: string; name: string }, confirmation: OwnerConfirmation, next: string, ip: string | null, browser: RecognisedBrowser | null): Promise<void> {
    await this.confirmManagedHere(user, confirmation, ip, browser);
    await this.users.changeWithAudit(user.id, { passwordHash: await hashPassword(next) }, 'password.change', ip);
    await this.webSessions.endAllFor(user.id);
    await this.tokens.revokeGrantsOfUser(user.id, 'password changed', ip);
    await this.mailer.send(passwordChangedMail(user, this.config.publicUrl, { how: 'on its account page', ip, cliTokensRevoked: false }));
  }

  /**
   * Deletes the account, confirmed by its owner (confirmOwner): every token, refresh
   * family, web session and link ends with it, and every replica forgets its tokens at once (the
   * users trigger announces it); its audit events are kept without personal data, and the
   * address gets one last mail. Not the last administrator's account, nor that of the only owner of
   * an organization with other members (an organization of theirs alone goes with it, by its keys).
   * @throws WrongPasswordError, LastAdminError, SoleOwnerError, TooManyRequests, ConfirmInSudoMode
   */
  async deleteAccount(user: { id: string; email: string; name: string }, confirmation: OwnerConfirmation, ip: string | null, browser: RecognisedBrowser | null): Promise<void> {
    // Asked first too, so a refusal costs no password attempt; asked again under the locks below.
    const soleOwned = await this.organizations.soleOwnerships(user.id);
    if (soleOwned.length) throw new SoleOwnerError(soleOwned);
    await this.confirmOwner(await this.signInMethod(user), user, confirmation, ip, browser);
    const ownOrganizations = await this.organizations.organizationsOfTheirOwn(user.id);
    const outcome = await this.users.deleteAccount(user.id, (tx) => this.organizations.checkAccountDeletion(tx, user.id));
    if (outcome === 'last-admin') throw new LastAdminError();
    await this.organizations.deleteIfMemberless(ownOrganizations);
    this.revocations.userRevoked(user.id);
    await this.mailer.send(accountDeletedMail(user, this.config.publicUrl, ip));
  }

  /**
   * Checks the account's password, counted before the check like a sign-in: from the owner's
   * recognised browser (the signed-in session asking, web/device-cookies.ts signedInBrowser)
   * against that browser alone, so failed sign-ins by others never make the owner's right
   * password a 429; without one, against the account and the address.
   * @throws WrongPasswordError, TooManyRequests
   */
  async checkPassword(email: string, password: string, ip: string | null, browser: RecognisedBrowser | null): Promise<void> {
    await this.limits.attemptSignIn(email, ip ?? '', browser);
    if (!(await this.users.authenticate(email, password))) throw new WrongPasswordError();
    await this.limits.signInSucceeded(email, ip ?? '', browser);
  }
}
