import { AccountsModule } from '../accounts/accounts.module.js';
import { OrganizationsModule } from '../organizations/organizations.module.js';
import { Module } from '@nestjs/common';
import { ServiceAccountsModule } from '../service-accounts/service-accounts.module.js';
import { DeviceLoginModule } from '../device-login/device-login.module.js';
import { RefreshTokensModule } from '../refresh-tokens/refresh-tokens.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
import { DeviceLoginController } from './device-login.controller.js';
import { TokenIssuanceService } from './token-issuance.service.js';
import { TokensController } from './tokens.controller.js';

/** The contract's routes, `/api/cli/auth/*` (seed §4): HTTP only; the rules are the modules below. */
@Module({
  imports: [DeviceLoginModule, TokensModule, RefreshTokensModule, UsersModule, AccountsModule, OrganizationsModule, ServiceAccountsModule],
  controllers: [TokensController, DeviceLoginController],
  providers: [TokenIssuanceService],
})
export class CliAuthModule {}
