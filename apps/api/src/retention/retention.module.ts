import { ServiceAccountsModule } from '../service-accounts/service-accounts.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';
import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { GrantsModule } from '../grants/grants.module.js';
import { DeviceLoginModule } from '../device-login/device-login.module.js';
import { RefreshTokensModule } from '../refresh-tokens/refresh-tokens.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { RetentionService } from './retention.service.js';
import { AccountsModule } from '../accounts/accounts.module.js';
import { OrganizationsModule } from '../organizations/organizations.module.js';

@Module({
  imports: [ScheduleModule.forRoot(), TokensModule, RefreshTokensModule, DeviceLoginModule, GrantsModule, WebSessionsModule, AccountsModule, OrganizationsModule, ServiceAccountsModule, WebhooksModule],
  providers: [RetentionService],
})
export class RetentionModule {}
