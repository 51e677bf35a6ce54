import { Injectable } from '@nestjs/common';
import { ApiException } from '../common/api-exception.js';
import { ERROR_CODES } from '@prospect/contract';
import { FederatedIdentitiesRepository } from './federated-identities.repository.js';
import { IdentityProvidersRepository } from './identity-providers.repository.js';
import { OrganizationsService } from '../organizations/organizations.service.js';

/** How long a provider's sign-in waits for the person to prove the account it would be linked to (and its mailed link lasts). */
export const PENDING_LINK_MINUTES = 30;

/** An address whose domain a provider enforces tried another way in (a password, a passkey). */
export class SignInThroughProviderRequired extends ApiException {
  constructor(
    readonly email: string,
    readonly provider: { id: string; displayName: string },
  ) {
    super(403, ERROR_CODES.forbidden, `${email} signs in with ${provider.displayName}: use “Continue with ${provider.displayName}” on the sign-in page.`);
  }
}

/** A provider that enforces a domain, and where its sign-in starts (`next` and `login_hint` may follow as a query). */
export interface EnforcingProvider {
  id: string;
  displayName: string;
  signInPath: string;
}

const openIdSignInPath = (id: string) => `/login/sso/${encodeURIComponent(id)}`;

/**
 * The policy at a provider's edge that the other doors ask about (issue #34): whether an address
 * must sign in through a provider (`enforce`, for its domains, while the provider is enabled: a
 * disabled provider enforces nothing, or nobody of the domain could sign in). Password sign-in,
 * reset mail and passwords set by invitation are refused for such addresses. An organization
 * enforces through its verified domains (issue #44): a domain it verified, with `enforce_sso`, signs
 * in only through the organization's enabled provider for it, read at every ask (a domain removed
 * or lost since enforces nothing, and nor does a domain whose provider is disabled or gone).
 */
@Injectable()
export class FederationPolicy {
  constructor(
    private readonly providers: IdentityProvidersRepository,
    private readonly links: FederatedIdentitiesRepository,
    private readonly organizations: OrganizationsService,
  ) {}

  /**
   * The enabled provider that enforces this address's domain (the instance's, or the organization's
   * that verified it), if any, with the path that starts a sign-in there (`signInPath`). An
   * organization's SAML connection with `enforce` (issue #47) enforces every domain the
   * organization has verified, before its OpenID providers' `enforceSso` domains.
   */
  async enforcingProviderFor(email: string): Promise<EnforcingProvider | undefined> {
    const at = email.lastIndexOf('@');
    if (at < 0) return undefined;
    const domain = email.slice(at + 1).trim().toLowerCase();
    const instanceWide = await this.providers.enforcingFor(domain);
    if (instanceWide) return { ...instanceWide, signInPath: openIdSignInPath(instanceWide.id) };
    const owner = await this.organizations.domainOwner(domain);
    if (!owner) return undefined;
    const saml = await this.providers.enforcingSamlOf(owner.organizationId);
    const org = saml && (await this.organizations.namesOf([owner.organizationId])).get(owner.organizationId);
    if (saml && org) return { ...saml, signInPath: `/saml/${encodeURIComponent(org.slug)}/login` };
    const provider = owner.enforceSso ? await this.providers.enabledOfOrganizationFor(owner.organizationId, domain) : undefined;
    return provider && { ...provider, signInPath: openIdSignInPath(provider.id) };
  }

  /** The enabled providers this person is linked to (and not refused by): sudo mode can go back to them (an OpenID provider, or a SAML connection). */
  linkedProviders(userId: string): Promise<Array<{ id: string; displayName: string; protocol: 'openid' | 'saml' }>> {
    return this.links.providersOf(userId);
  }

  /**
   * Whether this sign-in is the proof of an account that a provider's sign-in in this browser is
   * waiting to link (its pending link, still in time): the one use an enforced account's password keeps.
   */
  provesPendingLink(pending: { userId: string; at: number } | undefined, userId: string, now: Date): boolean {
    return pending?.userId === userId && now.getTime() - pending.at <= PENDING_LINK_MINUTES * 60_000;
  }

  /** The enabled providers, for the sign-in page. */
  enabledProviders(): Promise<Array<{ id: string; displayName: string }>> {
    return this.providers.listEnabled();
  }
}
