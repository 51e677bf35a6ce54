import { Module } from '@nestjs/common';
import { TokensModule } from '../tokens/tokens.module.js';
import { DeviceLoginController } from './device-login.controller.js';
import { DeviceLoginService } from './device-login.service.js';

@Module({
  imports: [TokensModule],
  controllers: [DeviceLoginController],
  providers: [DeviceLoginService],
  exports: [DeviceLoginService],
})
export class DeviceLoginModule {}
