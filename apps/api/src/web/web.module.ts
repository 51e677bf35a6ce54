import { ApprovalRule } from './page-guards.js';
import { type MiddlewareConsumer, Module, type NestModule, RequestMethod } from '@nestjs/common';
import { ROUTES } from '@prospect/contract';
import { DeviceLoginModule } from '../device-login/device-login.module.js';
import { OAuthModule } from '../oauth/oauth.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
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
import { PageChain } from './page-chain.js';
import { SignInService } from './sign-in.service.js';
import { TokensPageController } from './tokens-page.controller.js';
import { AdminIdentityProvidersPageController } from './admin-identity-providers-page.controller.js';
import { FederationPagesController } from './federation-pages.controller.js';
import { FederationLinkPagesController } from './federation-link-pages.controller.js';
import { FederationRefusalPage } from './federation-refusal-page.js';
import { PasskeyCeremonies } from './passkey-ceremonies.js';

/** Server-rendered pages: sign-up, sign-in, mailed links, device approval, CLI tokens, the account, people and OAuth clients (admins). */
@Module({
  imports: [UsersModule, TokensModule, DeviceLoginModule, OAuthModule, WebSessionsModule, AccountsModule, AdminModule],
  controllers: [AuthPagesController, DevicePageController, TokensPageController, AdminClientsPageController, AdminClientPageController, PasswordPagesController, AccountPageController,
    AdminUsersPageController, VerifyEmailPageController, InvitationPageController, EmailChangePageController,
    SecondFactorPageController, SudoPageController, SecurityPageController, PasskeysPageController, PasskeySignInController,
    ConsentPageController,
    AdminIdentityProvidersPageController, FederationPagesController, FederationLinkPagesController],
  providers: [LocalStrategy, SignInService, DeviceCookies, SudoPages, FederationRefusalPage, PageChain, PasskeyCeremonies, ApprovalRule],
  exports: [PageChain],
})
export class WebModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // The pages' own chain (headers, forms, session) is PageChain, which bootstrap.ts mounts.
    // The one API route a signed-in browser may call (with its CSRF token): see @AllowWebSession.
    consumer.apply(WebSessionMiddleware).forRoutes({ path: ROUTES.issueToken, method: RequestMethod.POST });
  }
}
