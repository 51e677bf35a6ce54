import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { DeviceLoginModule } from '../device-login/device-login.module.js';
import { RefreshTokensModule } from '../refresh-tokens/refresh-tokens.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { RetentionService } from './retention.service.js';
import { PasswordResetModule } from '../password-reset/password-reset.module.js';

@Module({
  imports: [ScheduleModule.forRoot(), TokensModule, RefreshTokensModule, DeviceLoginModule, WebSessionsModule, PasswordResetModule],
  providers: [RetentionService],
})
export class RetentionModule {}
