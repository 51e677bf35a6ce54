import { Module } from '@nestjs/common';
import { DeviceLoginModule } from '../device-login/device-login.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { AuthPagesController } from './auth-pages.controller.js';
import { DevicePageController } from './device-page.controller.js';
import { TokensPageController } from './tokens-page.controller.js';

/** Server-rendered pages: sign-up, sign-in, device approval, CLI tokens. */
@Module({
  imports: [UsersModule, TokensModule, DeviceLoginModule, WebSessionsModule],
  controllers: [AuthPagesController, DevicePageController, TokensPageController],
})
export class WebModule {}
