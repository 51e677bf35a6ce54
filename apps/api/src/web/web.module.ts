import { Injectable, type MiddlewareConsumer, Module, type NestMiddleware, type NestModule, RequestMethod } from '@nestjs/common';
import { OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import express, { type NextFunction, type Request, type Response } from 'express';
import { BODY_LIMIT } from '../common/body-limit.js';
import { refuseMalformedForms } from '../common/well-formed-text.js';
import { DeviceLoginModule } from '../device-login/device-login.module.js';
import { OAuthModule } from '../oauth/oauth.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { WebSessionMiddleware, WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { AccountsModule } from '../accounts/accounts.module.js';
import { AdminModule } from '../admin/admin.module.js';
import { AdminUsersPageController } from './admin-users-page.controller.js';
import { InvitationPageController } from './invitation-page.controller.js';
import { EmailChangePageController } from './email-change-page.controller.js';
import { SecondFactorPageController } from './second-factor-page.controller.js';
import { SecurityPageController } from './security-page.controller.js';
import { SudoPageController } from './sudo-page.controller.js';
import { SudoPages } from './sudo-pages.js';
import { PasskeysPageController } from './passkeys-page.controller.js';
import { PasskeySignInController } from './passkey-sign-in.controller.js';
import { VerifyEmailPageController } from './verify-email-page.controller.js';
import { AdminClientPageController } from './admin-client-page.controller.js';
import { PasswordPagesController } from './password-pages.controller.js';
import { AccountPageController } from './account-page.controller.js';
import { AdminClientsPageController } from './admin-clients-page.controller.js';
import { AuthPagesController } from './auth-pages.controller.js';
import { ConsentPageController } from './consent-page.controller.js';
import { DeviceCookies } from './device-cookies.js';
import { DevicePageController } from './device-page.controller.js';
import { LocalStrategy } from './local.strategy.js';
import { pageHeaders } from './page-headers.js';
import { SignInService } from './sign-in.service.js';
import { TokensPageController } from './tokens-page.controller.js';
import { AdminIdentityProvidersPageController } from './admin-identity-providers-page.controller.js';
import { FederationPagesController } from './federation-pages.controller.js';
import { FederationLinkPagesController } from './federation-link-pages.controller.js';
import { FederationRefusalPage } from './federation-refusal-page.js';

/**
 * What every page request goes through: the document headers, the form parser (pages
 * read urlencoded forms; the JSON API never runs it), the web session.
 */
@Injectable()
class PageMiddleware implements NestMiddleware {
  private readonly chain = express
    .Router()
    .use(pageHeaders, express.urlencoded({ limit: BODY_LIMIT, extended: false, parameterLimit: 50 }), refuseMalformedForms, (req, res, next) =>
      this.sessions.handle(req, res, next),
    );

  constructor(private readonly sessions: WebSessions) {}

  use(req: Request, res: Response, next: NextFunction): void {
    this.chain(req, res, next);
  }
}

/** Server-rendered pages: sign-up, sign-in, mailed links, device approval, CLI tokens, the account, people and OAuth clients (admins). */
@Module({
  imports: [UsersModule, TokensModule, DeviceLoginModule, OAuthModule, WebSessionsModule, AccountsModule, AdminModule],
  controllers: [AuthPagesController, DevicePageController, TokensPageController, AdminClientsPageController, AdminClientPageController, PasswordPagesController, AccountPageController,
    AdminUsersPageController, VerifyEmailPageController, InvitationPageController, EmailChangePageController,
    SecondFactorPageController, SudoPageController, SecurityPageController, PasskeysPageController, PasskeySignInController,
    ConsentPageController,
    AdminIdentityProvidersPageController, FederationPagesController, FederationLinkPagesController],
  providers: [LocalStrategy, SignInService, DeviceCookies, SudoPages, FederationRefusalPage],
})
export class WebModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // Everything but the JSON API and the OAuth endpoints: one router layer, rather than one per
    // page route that every API request would walk past (Express tries its layers in order).
    consumer
      .apply(PageMiddleware)
      .exclude({ path: 'api/{*rest}', method: RequestMethod.ALL }, { path: 'oauth/{*rest}', method: RequestMethod.ALL }, { path: '.well-known/{*rest}', method: RequestMethod.ALL })
      .forRoutes({ path: '{*rest}', method: RequestMethod.ALL });
    // The authorization endpoint is a page too (the sign-in it needs, the consent page): OAuth's path, the pages' chain.
    consumer
      .apply(PageMiddleware)
      .forRoutes({ path: OAUTH_ROUTES.authorize, method: RequestMethod.GET }, { path: `${OAUTH_ROUTES.authorize}/{*rest}`, method: RequestMethod.POST });
    // The one API route a signed-in browser may call (with its CSRF token): see @AllowWebSession.
    consumer.apply(WebSessionMiddleware).forRoutes({ path: ROUTES.issueToken, method: RequestMethod.POST });
  }
}
