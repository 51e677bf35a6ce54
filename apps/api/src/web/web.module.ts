import { type MiddlewareConsumer, Module, type NestModule, RequestMethod } from '@nestjs/common';
import { ROUTES } from '@prospect/contract';
import { DeviceLoginModule } from '../device-login/device-login.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
import { AuthPagesController } from './auth-pages.controller.js';
import { DevicePageController } from './device-page.controller.js';
import { TokensPageController } from './tokens-page.controller.js';
import { WebSessionPrincipalMiddleware } from './web-session.middleware.js';
import { WebSessionService } from './web-session.service.js';

/** Server-rendered pages: sign-up, sign-in, device approval, CLI tokens. */
@Module({
  imports: [UsersModule, TokensModule, DeviceLoginModule],
  controllers: [AuthPagesController, DevicePageController, TokensPageController],
  providers: [WebSessionService, WebSessionPrincipalMiddleware],
})
export class WebModule implements NestModule {
  configure(consumer: MiddlewareConsumer) {
    consumer.apply(WebSessionPrincipalMiddleware).forRoutes({ path: ROUTES.issueToken.slice(1), method: RequestMethod.POST });
  }
}
