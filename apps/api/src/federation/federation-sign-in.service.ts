import { Injectable } from '@nestjs/common';
import { looksLikeEmail } from '@prospect/contract';
import type { Response } from 'express';
import { ApiException } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { isUniqueViolation } from '../database/sql.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { TokensService } from '../tokens/tokens.service.js';
import type { User } from '../users/user.entity.js';
import { normalizeEmail, UsersService } from '../users/users.service.js';
import { OrganizationsService } from '../organizations/organizations.service.js';
import { ScimProvisionedAccounts } from '../scim/scim-provisioned-accounts.js';
import type { FederatedSignIn, PendingFederatedLink } from '../web-sessions/web-account.js';
import { FederatedIdentitiesRepository, type LinkProof } from './federated-identities.repository.js';
import { FederatedLinkWriter } from './federated-link-writer.js';
import { PENDING_LINK_MINUTES } from './federation-policy.js';
import { type IdentityProviderRow, IdentityProvidersRepository } from './identity-providers.repository.js';
import { LinkProofMail } from './link-proof-mail.js';
import { showsSecondFactor } from './provider-claims.js';
import { ProviderRedirect } from './provider-redirect.js';
import { type ProviderIdentity, ProviderAnswerRefused, ProviderUnreachable, RelyingParty } from './relying-party.js';
import type { Flight } from './sign-in-flights.js';
import type { Tx } from '../database/tx.js';

/**
 * A sign-in through a provider that is not accepted: `reason` for the audit log (stable words),
 * `message` for the person, `status` for the page.
 */
export class FederationRefused extends Error {
  constructor(
    readonly reason: string,
    message: string,
    readonly status: number,
    readonly userId: string | null = null,
    /** The provider vouched for an identity first (which took a sign-in there): audited at once, not counted (AnonymousRefusals). */
    readonly identified = userId !== null,
    /** The organization whose provider refused it (issue #44): the refusal shows in its log too. */
    readonly organizationId: string | null = null,
  ) {
    super(message);
  }
}

/** Where a provider's sign-in leads. */
export type SignInOutcome =
  /** A linked account (or one made now): sign it in; `secondFactor` when the provider's amr/acr showed one. */
  | { kind: 'signed-in'; user: User; via: FederatedSignIn; secondFactor: boolean; created: boolean }
  /** An account with that address exists, not linked: the person proves it first. */
  | { kind: 'proof-needed'; pending: Omit<PendingFederatedLink, 'next' | 'at'> };

/**
 * Sign-in through a team's own OpenID provider (issue #34), on the credential rule of #31:
 * - a provider's answer is linked to an account by (issuer, subject) alone, never by an address;
 * - a first sign-in creates an account only with the provider's `allowSignUp`, and only for an
 *   address the provider asserts as verified (`email_verified: true`; saying nothing is not
 *   verifying) within its `emailDomains` (the non-verifying-provider class of pre-hijacking);
 * - an address that has an account already is linked only after the person proves that account
 *   in the same browser: a full sign-in to it (its password and second factor), which keeps what
 *   it had, or the link mailed to the address, which ends everything set up before, as a reset
 *   that proves an address does (the classic–federated merge class);
 * - an account made by federation has no password until its owner sets one (by a reset link,
 *   refused while a provider enforces the domain);
 * - an organization's provider (issue #44) signs in only addresses of the domains its organization
 *   has verified at that moment, asked again at every sign-in, linked identity or not: the address
 *   the provider asserts (verified by it) and the address of the account it leads to must both be
 *   in them, so a domain removed or lost since, or an organization admin's provider asserting
 *   someone of another domain, signs nobody in;
 * - an account the provider's organization's SCIM created (issue #47) is an invited member who signs
 *   in through the organization's provider: its first sign-in links it at once, without the proof,
 *   while the account is still as the directory made it (joinProvisioned); a person that
 *   organization's directory deactivated signs in through its providers no more, linked or not.
 *   The rule is here, once, for OpenID Connect and SAML alike (SamlSignIn ends in signIn).
 */
@Injectable()
export class FederationSignIn {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly providers: IdentityProvidersRepository,
    private readonly links: FederatedIdentitiesRepository,
    private readonly relyingParty: RelyingParty,
    private readonly redirect: ProviderRedirect,
    private readonly linkWriter: FederatedLinkWriter,
    private readonly proofMail: LinkProofMail,
    private readonly users: UsersService,
    private readonly tokens: TokensService,
    private readonly limits: RateLimits,
    private readonly clock: Clock,
    private readonly organizations: OrganizationsService,
    private readonly directory: ScimProvisionedAccounts,
  ) {}

  /** The redirect URI to register at the provider. */
  redirectUri(providerId: string): string {
    return this.redirect.redirectUri(providerId);
  }

  /** A configured provider's display name (enabled or not), for a refusal's page. */
  async knownProviderName(providerId: string): Promise<string | undefined> {
    return (await this.providers.findById(providerId))?.displayName;
  }

  /** An enabled provider, or a refusal saying it cannot be used. */
  async enabledProvider(providerId: string): Promise<IdentityProviderRow> {
    const provider = await this.providers.findById(providerId);
    if (!provider) throw new FederationRefused('unknown provider', 'There is no such sign-in on this Prospect.', 404);
    if (provider.disabledAt) throw new FederationRefused('provider disabled', `Sign-in with ${provider.displayName} is turned off on this Prospect. Ask an administrator.`, 403);
    return provider;
  }

  /** An enabled OpenID provider: a SAML connection's sign-in starts at /saml/{slug}/login, not here. */
  private async enabledOpenIdProvider(providerId: string): Promise<IdentityProviderRow> {
    const provider = await this.enabledProvider(providerId);
    if (provider.protocol !== 'openid') throw new FederationRefused('unknown provider', 'There is no such sign-in on this Prospect.', 404);
    return provider;
  }

  /**
   * Sends the browser to the provider: a new state, nonce and PKCE verifier kept in its flight
   * cookie (sign-in-flights.ts); the provider's authorization URL to redirect to. For sudo mode
   * (`purpose` 'sudo'), the provider is asked for a fresh sign-in (`prompt=login`, `max_age=0`),
   * and the answer counts only in the session that asked.
   */
  async begin(
    res: Response,
    providerId: string,
    purpose: Flight['purpose'],
    options: { next: string; loginHint?: string; userId?: string; sessionId?: string },
  ): Promise<string> {
    return this.redirect.begin(res, await this.enabledOpenIdProvider(providerId), purpose, options);
  }

  /**
   * The provider's answer at `callbackUrl`, checked against the flight this browser started:
   * the provider and the identity it vouches for.
   * @throws FederationRefused
   */
  async answer(providerId: string, flight: Flight | null, callbackUrl: URL): Promise<{ provider: IdentityProviderRow; identity: ProviderIdentity }> {
    if (!flight || flight.providerId !== providerId) {
      throw new FederationRefused('no sign-in started in this browser', 'This sign-in was not started in this browser, or took more than ten minutes. Please start again.', 400);
    }
    const provider = await this.enabledOpenIdProvider(providerId);
    try {
      return { provider, identity: await this.relyingParty.identify(provider, callbackUrl, { ...flight, fresh: flight.purpose === 'sudo' }) };
    } catch (err) {
      if (err instanceof ProviderAnswerRefused) {
        if (err.kind === 'misconfigured') {
          throw new FederationRefused(err.reason, `Sign-in with ${provider.displayName} is not working: ${provider.displayName} refused this Prospect’s client id or secret. Ask an administrator.`, 502);
        }
        const message =
          err.kind === 'refused'
            ? `${provider.displayName} did not sign you in. Please try again, or ask your administrator.`
            : `The answer from ${provider.displayName} did not match the sign-in this browser started, so it was refused. Please start again.`;
        throw new FederationRefused(err.reason, message, 401);
      }
      if (err instanceof ProviderUnreachable) throw new FederationRefused(`provider unreachable: ${err.message}`, `${provider.displayName} could not be reached. Please try again in a moment.`, 502);
      throw err;
    }
  }

  /**
   * Where the identity leads: its linked account (the link verified now), an account made now,
   * or an account with that address to prove first. Two first sign-ins of one identity at once
   * make one account (lockIdentity); an account made meanwhile by another door is found on the retry.
   * @throws FederationRefused
   */
  async signIn(provider: IdentityProviderRow, identity: ProviderIdentity, ip: string | null): Promise<SignInOutcome> {
    const refreshTokenSealed = identity.refreshToken ? await this.relyingParty.sealRefreshToken(identity.issuer, identity.subject, identity.refreshToken) : undefined;
    const secondFactor = showsSecondFactor(identity.amr, identity.acr, provider.mfaAcrValues);
    // Before the transaction: the organization's domains are read on another connection.
    const domains = await this.organizationDomains(provider);
    if (domains) this.refuseOutsideOrganization(provider, domains, this.provenAddress(provider, identity));
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.uow.run(async (tx): Promise<SignInOutcome> => {
          const now = this.clock.now();
          await this.links.lockIdentity(tx, identity.issuer, identity.subject);
          const link = await this.links.verified(tx, identity.issuer, identity.subject, identity.emailVerified ? (identity.email ?? null) : null, refreshTokenSealed, now);
          if (link) {
            const user = await this.users.findById(link.userId, tx);
            if (!user || user.disabledAt) throw this.accountDisabled(user);
            if (domains) this.refuseOutsideOrganization(provider, domains, user.email, user.id);
            if (provider.organizationId && (await this.directory.stateOf(tx, provider.organizationId, user.id)) === 'deactivated') throw this.deactivated(provider, user.id);
            return { kind: 'signed-in', user, via: this.via(provider, link.id), secondFactor, created: false };
          }
          const email = this.provenAddress(provider, identity);
          const existing = await this.users.findByEmail(email, tx);
          if (existing) {
            if (existing.disabledAt) throw this.accountDisabled(existing);
            const pending = { providerId: provider.id, providerName: provider.displayName, issuer: identity.issuer, subject: identity.subject, email, userId: existing.id };
            const joined = provider.organizationId && (await this.joinProvisioned(tx, provider, provider.organizationId, { ...pending, epoch: existing.credentialEpoch, refreshTokenSealed }, now, ip));
            if (joined) return { kind: 'signed-in', user: existing, via: this.via(provider, joined), secondFactor, created: false };
            return { kind: 'proof-needed', pending: { ...pending, epoch: existing.credentialEpoch, secondFactor, refreshTokenSealed } };
          }
          if (!provider.allowSignUp) {
            throw new FederationRefused(
              'no account, and the provider makes none',
              `There is no Prospect account for ${email}, and ${provider.displayName} does not create them here. Ask an administrator to invite you.`,
              403,
              null,
              true,
            );
          }
          const { user, linkId } = await this.linkWriter.newAccount(tx, provider, identity, email, refreshTokenSealed, now, ip);
          return { kind: 'signed-in', user, via: this.via(provider, linkId), secondFactor, created: true };
        });
      } catch (err) {
        // An account with the address was made meanwhile (sign-up, an invitation): it is found now.
        const taken = isUniqueViolation(err) || (err instanceof ApiException && err.getStatus() === 409);
        if (taken && attempt === 1) continue;
        throw err;
      }
    }
  }

  /**
   * Sudo mode through the provider: the fresh sign-in must be of an identity linked to the person
   * who asked (and the link is verified now).
   * @throws FederationRefused
   */
  async confirmSudo(provider: IdentityProviderRow, identity: ProviderIdentity, userId: string): Promise<FederatedSignIn> {
    const domains = await this.organizationDomains(provider);
    if (domains) this.refuseOutsideOrganization(provider, domains, this.provenAddress(provider, identity), userId);
    const link = await this.uow.run(async (tx) => {
      await this.links.lockIdentity(tx, identity.issuer, identity.subject);
      const found = await this.links.verified(tx, identity.issuer, identity.subject, null, undefined, this.clock.now());
      if (found?.userId !== userId) throw new FederationRefused('sudo through the provider: another identity', `That ${provider.displayName} account is not the one linked to yours. Confirm with your own.`, 403, userId);
      return found;
    });
    return this.via(provider, link.id);
  }

  /**
   * Links the pending identity to the account the person just signed in to in this browser (its
   * password and second factor): what the account had stays. Audited.
   * @throws FederationRefused
   */
  async linkAfterSignIn(pending: PendingFederatedLink, ip: string | null): Promise<FederatedSignIn> {
    return this.link(pending, 'sign-in', ip);
  }

  /**
   * Mails the link that proves the account by its address (to the address the provider asserted,
   * the account's); its hash, kept in this browser's pending link only.
   * @throws TooManyRequests when the address had its share of unsolicited mail this hour.
   */
  async mailProof(pending: PendingFederatedLink): Promise<string> {
    if (!(await this.limits.mailToRecipient(pending.email))) throw new FederationRefused('too many mails to the address', 'Too many mails went to this address this hour. Please try again later.', 429, pending.userId);
    return this.proofMail.send(pending);
  }

  /** Whether `token` is the mailed link of this pending link, still in time. */
  mailedProofMatches(pending: PendingFederatedLink | undefined, token: string): pending is PendingFederatedLink & { mail: { hash: string; at: number } } {
    return this.proofMail.matches(pending, token);
  }

  /**
   * Links the pending identity after the mailed link proved the address: the account becomes the
   * address owner's alone (linkProven 'mail': password, factors, other links, sessions end), and
   * every CLI token and refresh family of it is revoked.
   * @throws FederationRefused
   */
  async linkByMailedProof(pending: PendingFederatedLink, ip: string | null): Promise<FederatedSignIn> {
    const via = await this.link(pending, 'mail', ip);
    await this.tokens.revokeAllForUser(pending.userId, ip);
    return via;
  }

  /** A pending link is usable for PENDING_LINK_MINUTES. */
  pendingUsable(pending: PendingFederatedLink | undefined): pending is PendingFederatedLink {
    return pending !== undefined && this.clock.now().getTime() - pending.at <= PENDING_LINK_MINUTES * 60_000;
  }

  private async link(pending: PendingFederatedLink, proof: Exclude<LinkProof, 'directory'>, ip: string | null): Promise<FederatedSignIn> {
    const provider = await this.enabledProvider(pending.providerId);
    // The domain may have been removed while the person proved the account.
    const domains = await this.organizationDomains(provider);
    if (domains) this.refuseOutsideOrganization(provider, domains, pending.email, pending.userId);
    const outcome = await this.uow.run((tx) => this.linkWriter.linkProven(tx, pending, proof, this.clock.now(), ip));
    if (outcome === 'changed') {
      throw new FederationRefused('the account changed before it was linked', `Your account changed meanwhile. Please sign in with ${provider.displayName} again.`, 409, pending.userId);
    }
    if (outcome === 'taken') {
      throw new FederationRefused(
        'already linked to another identity',
        `This ${provider.displayName} account, or your Prospect account, is linked to another one already. Ask an administrator to unlink it first.`,
        409,
        pending.userId,
      );
    }
    return this.via(provider, outcome);
  }

  /** The address the provider vouches for, if it may sign in here: verified, and within its domains. */
  private provenAddress(provider: IdentityProviderRow, identity: ProviderIdentity): string {
    const email = identity.email ? normalizeEmail(identity.email) : '';
    if (!looksLikeEmail(email)) throw new FederationRefused('no usable address from the provider', `${provider.displayName} did not give an e-mail address Prospect can use.`, 403, null, true, provider.organizationId);
    if (!identity.emailVerified) {
      throw new FederationRefused(
        'address not verified by the provider (email_verified is not true)',
        `${provider.displayName} did not confirm that ${email} is yours (email_verified), so it cannot sign you in here. Ask your administrator.`,
        403,
        null,
        true,
        provider.organizationId,
      );
    }
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (!provider.emailDomains.includes(domain)) {
      throw new FederationRefused('address outside the provider’s domains', `${provider.displayName} may sign in addresses of ${provider.emailDomains.join(', ')} only, not ${email}.`, 403, null, true, provider.organizationId);
    }
    return email;
  }

  /** The domains an organization's provider may sign in now (its organization's verified ones); null for an instance-wide provider. */
  private async organizationDomains(provider: IdentityProviderRow): Promise<Set<string> | null> {
    return provider.organizationId ? new Set(await this.organizations.verifiedDomains(provider.organizationId)) : null;
  }

  /** Refuses an address of a domain the provider's organization has not verified (now). */
  private refuseOutsideOrganization(provider: IdentityProviderRow, verified: Set<string>, email: string, userId: string | null = null): void {
    const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
    if (verified.has(domain)) return;
    throw new FederationRefused(
      'address outside the organization’s verified domains',
      `${provider.displayName} belongs to an organization that may sign in only addresses of the domains it has verified, and ${domain} is not one of them now. Ask the organization’s administrators.`,
      403,
      userId,
      true,
      provider.organizationId,
    );
  }

  /**
   * The one door past the pre-hijack proof (issue #47): an account this provider's organization's
   * SCIM created is linked at its first sign-in through the organization's provider, when all hold:
   * the directory created it (not an account that existed and was linked), the person is active
   * there, the account never had a password nor a link nor a change of address (its credential
   * epoch is still the one it was made with), and the address the provider asserts, within the
   * organization's verified domains (checked before), is the account's (found by it). The
   * directory vouched for the address as the organization that proved it holds the domain, and
   * nobody else ever held a way into the account, so there is nothing the proof would protect.
   * A person the directory deactivated is refused. Any other case: undefined, and the proof stays.
   * The link's id when linked.
   * @throws FederationRefused when that organization's directory deactivated the person
   */
  private async joinProvisioned(
    tx: Tx,
    provider: IdentityProviderRow,
    organizationId: string,
    link: Omit<PendingFederatedLink, 'next' | 'at' | 'secondFactor'>,
    now: Date,
    ip: string | null,
  ): Promise<string | undefined> {
    const state = await this.directory.stateOf(tx, organizationId, link.userId);
    if (state === 'deactivated') throw this.deactivated(provider, link.userId);
    if (state !== 'unclaimed') return undefined;
    const outcome = await this.linkWriter.linkProvisioned(tx, link, organizationId, now, ip);
    return outcome === 'changed' || outcome === 'taken' ? undefined : outcome;
  }

  private deactivated(provider: IdentityProviderRow, userId: string): FederationRefused {
    return new FederationRefused(
      'deactivated by the organization’s directory',
      `Your organization’s directory has deactivated your access, so ${provider.displayName} cannot sign you in here. Ask your administrator.`,
      403,
      userId,
      true,
      provider.organizationId,
    );
  }

  private accountDisabled(user: User | null): FederationRefused {
    return new FederationRefused('account disabled', 'An administrator of this Prospect disabled your account, so it cannot sign in. Ask them to enable it again.', 403, user?.id ?? null, true);
  }

  private via(provider: IdentityProviderRow, linkId: string): FederatedSignIn {
    return { linkId, providerId: provider.id, providerName: provider.displayName, ...(provider.organizationId ? { organizationId: provider.organizationId } : {}) };
  }
}
