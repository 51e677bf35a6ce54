import { Global, Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
import { DeviceCookies } from '../web/device-cookies.js';
import { SignInService } from '../web/sign-in.service.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { AnonymousRefusals } from './anonymous-refusals.js';
import { FederatedIdentitiesRepository } from './federated-identities.repository.js';
import { FederationChecks } from './federation-checks.service.js';
import { FederationPagesController } from './federation-pages.controller.js';
import { FederationPolicy } from './federation-policy.js';
import { FederationSignIn } from './federation-sign-in.service.js';
import { IdentityProvidersRepository } from './identity-providers.repository.js';
import { IdentityProvidersService } from './identity-providers.service.js';
import { RelyingParty } from './relying-party.js';
import { SignInFlights } from './sign-in-flights.js';

/**
 * Sign-in through a team's own OpenID provider (issue #34): the providers admins configure, the
 * relying party (openid-client), the links by (issuer, subject), the sign-in pages and the leaver
 * check. Global, because the other doors ask its policy (FederationPolicy: an enforced domain
 * signs in through its provider only) and the admin and sudo pages use its services, while its
 * own pages finish a sign-in as the web's do (SignInService and DeviceCookies, provided here too:
 * the web module exports none of its providers).
 */
@Global()
@Module({
  imports: [UsersModule, TokensModule, WebSessionsModule, AccountsModule],
  controllers: [FederationPagesController],
  providers: [
    IdentityProvidersRepository,
    FederatedIdentitiesRepository,
    RelyingParty,
    SignInFlights,
    FederationPolicy,
    FederationSignIn,
    FederationChecks,
    IdentityProvidersService,
    AnonymousRefusals,
    SignInService,
    DeviceCookies,
  ],
  exports: [FederationPolicy, FederationSignIn, IdentityProvidersService],
})
export class FederationModule {}
