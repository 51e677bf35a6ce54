import { Module } from '@nestjs/common';
import { OrganizationsModule } from '../organizations/organizations.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
import { ClientCredentialsGrant } from './client-credentials.js';
import { IssuerKeys } from './issuer-keys.js';
import { ServiceAccountFederationsRepository } from './service-account-federations.repository.js';
import { ServiceAccountsController } from './service-accounts.controller.js';
import { ServiceAccountsRepository } from './service-accounts.repository.js';
import { ServiceAccountsService } from './service-accounts.service.js';
import { TokenExchangeGrant } from './token-exchange.js';

/**
 * Service accounts (issue #45): machine identities of one organization, their secrets, keys and
 * trusted issuers, and the grants that give them tokens (client credentials; token exchange of a
 * trusted issuer's token, workload identity federation). Owns `service_accounts`,
 * `service_account_secrets`, `service_account_keys`, `service_account_assertions`,
 * `service_account_federations` and `service_account_subject_tokens`; a service
 * account's `users` row is users/'s, its tokens tokens/'s.
 */
@Module({
  imports: [UsersModule, TokensModule, OrganizationsModule],
  controllers: [ServiceAccountsController],
  providers: [ServiceAccountsRepository, ServiceAccountFederationsRepository, ServiceAccountsService, ClientCredentialsGrant, IssuerKeys, TokenExchangeGrant],
  exports: [ServiceAccountsService, ClientCredentialsGrant, TokenExchangeGrant],
})
export class ServiceAccountsModule {}
