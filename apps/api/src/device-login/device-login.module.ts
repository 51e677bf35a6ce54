import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuthModule } from '../auth/auth.module.js';
import { RefreshTokensModule } from '../refresh-tokens/refresh-tokens.module.js';
import { GrantsModule } from '../grants/grants.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { DeviceApprovalService } from './device-approval.service.js';
import { DeviceLogin } from './device-login.entity.js';
import { DeviceLoginService } from './device-login.service.js';
import { DeviceLoginsRepository } from './device-logins.repository.js';

/**
 * The device authorization grant (RFC 8628): the terminal's side (start, poll, cancel) and the
 * browser's (find a login by its user code, approve or deny it, under the wrong-code limit of
 * rate-limits/), on one table. No HTTP here: cli-auth/, oauth/ and web/ word the outcomes for their callers.
 */
@Module({
  imports: [TypeOrmModule.forFeature([DeviceLogin]), AuthModule, GrantsModule, TokensModule, RefreshTokensModule],
  providers: [DeviceLoginService, DeviceApprovalService, DeviceLoginsRepository],
  exports: [DeviceLoginService, DeviceApprovalService],
})
export class DeviceLoginModule {}
