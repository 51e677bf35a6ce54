import { type MiddlewareConsumer, Module, type NestModule, RequestMethod } from '@nestjs/common';
import { ROUTES } from '@prospect/contract';
import { DeviceLoginModule } from '../device-login/device-login.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
import { WebSessionMiddleware, WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { AuthPagesController } from './auth-pages.controller.js';
import { DevicePageController } from './device-page.controller.js';
import { LocalStrategy } from './local.strategy.js';
import { PageHeadersMiddleware } from './page-headers.js';
import { SignInService } from './sign-in.service.js';
import { TokensPageController } from './tokens-page.controller.js';

/** Server-rendered pages: sign-up, sign-in, device approval, CLI tokens. */
@Module({
  imports: [UsersModule, TokensModule, DeviceLoginModule, WebSessionsModule],
  controllers: [AuthPagesController, DevicePageController, TokensPageController],
  providers: [LocalStrategy, SignInService],
})
export class WebModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    const pages = [AuthPagesController, DevicePageController, TokensPageController];
    consumer.apply(PageHeadersMiddleware, WebSessionMiddleware).forRoutes(...pages);
    // The one API route a signed-in browser may call (with its CSRF token): see @AllowWebSession.
    consumer.apply(WebSessionMiddleware).forRoutes({ path: ROUTES.issueToken, method: RequestMethod.POST });
  }
}
