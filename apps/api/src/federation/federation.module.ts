import { Global, Module } from '@nestjs/common';
import { TokensModule } from '../tokens/tokens.module.js';
import { OrganizationsModule } from '../organizations/organizations.module.js';
import { ScimModule } from '../scim/scim.module.js';
import { UsersModule } from '../users/users.module.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { AccountCredentials } from './account-credentials.js';
import { AnonymousRefusals } from './anonymous-refusals.js';
import { FederatedEndings } from './federated-endings.js';
import { FederatedIdentitiesRepository } from './federated-identities.repository.js';
import { FederatedLinkWriter } from './federated-link-writer.js';
import { FederationChecks } from './federation-checks.service.js';
import { FederationPolicy } from './federation-policy.js';
import { FederationSignIn } from './federation-sign-in.service.js';
import { IdentityProvidersRepository } from './identity-providers.repository.js';
import { IdentityProvidersService } from './identity-providers.service.js';
import { LinkProofMail } from './link-proof-mail.js';
import { OrgIdentityProvidersController } from './org-identity-providers.controller.js';
import { ProviderNetwork } from './provider-network.js';
import { ProviderRedirect } from './provider-redirect.js';
import { RelyingParty } from './relying-party.js';
import { SignInFlights } from './sign-in-flights.js';
import { OrgSamlController } from './saml/org-saml.controller.js';
import { SamlConnectionsRepository } from './saml/saml-connections.repository.js';
import { SamlConnectionsService } from './saml/saml-connections.service.js';
import { SamlFlights } from './saml/saml-flights.js';
import { SamlSignIn } from './saml/saml-sign-in.service.js';

/**
 * Sign-in through a team's own OpenID provider (issue #34): the providers admins configure, the
 * relying party (openid-client), the links by (issuer, subject) and the leaver check. Its pages
 * (web/federation/federation-pages.controller.ts) live with the other pages, so this module
 * imports nothing of the web. Global, because the other doors ask its policy (FederationPolicy: an
 * enforced domain signs in through its provider only) and the admin and sudo pages use its services.
 * An organization's providers (issue #44) are its admins' (`/api/orgs/{slug}/identity-providers`),
 * sign in only the organization's verified domains, and end with the organization (OrganizationTeardown).
 * An organization's SAML 2.0 connection (issue #47, saml/) is a provider of the same kind: its
 * sign-ins end in FederationSignIn's links and rules; only the protocol differs.
 */
@Global()
@Module({
  imports: [UsersModule, TokensModule, WebSessionsModule, OrganizationsModule, ScimModule],
  controllers: [OrgIdentityProvidersController, OrgSamlController],
  providers: [
    IdentityProvidersRepository,
    FederatedIdentitiesRepository,
    FederatedEndings,
    RelyingParty,
    ProviderNetwork,
    SignInFlights,
    FederationPolicy,
    FederationSignIn,
    ProviderRedirect,
    FederatedLinkWriter,
    LinkProofMail,
    FederationChecks,
    IdentityProvidersService,
    AnonymousRefusals,
    AccountCredentials,
    SamlConnectionsRepository,
    SamlConnectionsService,
    SamlFlights,
    SamlSignIn,
  ],
  exports: [AccountCredentials, FederationPolicy, FederationSignIn, IdentityProvidersService, SignInFlights, AnonymousRefusals, SamlConnectionsService, SamlSignIn, SamlFlights],
})
export class FederationModule {}
