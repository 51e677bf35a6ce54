import { Module } from '@nestjs/common';
import { OrganizationsModule } from '../organizations/organizations.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
import { ClientCredentialsGrant } from './client-credentials.js';
import { ServiceAccountsController } from './service-accounts.controller.js';
import { ServiceAccountsRepository } from './service-accounts.repository.js';
import { ServiceAccountsService } from './service-accounts.service.js';

/**
 * Service accounts (issue #45): machine identities of one organization, their secrets and keys,
 * and the client credentials grant that gives them tokens. Owns `service_accounts`,
 * `service_account_secrets`, `service_account_keys` and `service_account_assertions`; a service
 * account's `users` row is users/'s, its tokens tokens/'s.
 */
@Module({
  imports: [UsersModule, TokensModule, OrganizationsModule],
  controllers: [ServiceAccountsController],
  providers: [ServiceAccountsRepository, ServiceAccountsService, ClientCredentialsGrant],
  exports: [ServiceAccountsService, ClientCredentialsGrant],
})
export class ServiceAccountsModule {}
