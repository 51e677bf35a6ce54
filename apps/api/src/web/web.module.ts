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
import { AdminUsersPageController } from './admin/admin-users-page.controller.js';
import { InvitationPageController } from './sign-in/invitation-page.controller.js';
import { EmailChangePageController } from './account/email-change-page.controller.js';
import { SecondFactorPageController } from './sign-in/second-factor-page.controller.js';
import { SecurityPageController } from './account/security-page.controller.js';
import { SudoPageController } from './sign-in/sudo-page.controller.js';
import { SudoPages } from './sudo-pages.js';
import { PasskeysPageController } from './account/passkeys-page.controller.js';
import { PasskeySignInController } from './sign-in/passkey-sign-in.controller.js';
import { VerifyEmailPageController } from './sign-in/verify-email-page.controller.js';
import { AdminClientPageController } from './admin/admin-client-page.controller.js';
import { PasswordPagesController } from './sign-in/password-pages.controller.js';
import { AccountPageController } from './account/account-page.controller.js';
import { AdminClientsPageController } from './admin/admin-clients-page.controller.js';
import { AuthPagesController } from './sign-in/auth-pages.controller.js';
import { ConsentPageController } from './oauth/consent-page.controller.js';
import { DeviceCookies } from './device-cookies.js';
import { DevicePageController } from './device/device-page.controller.js';
import { LocalStrategy } from './sign-in/local.strategy.js';
import { PageChain } from './page-chain.js';
import { SignInService } from './sign-in.service.js';
import { TokensPageController } from './account/tokens-page.controller.js';
import { AdminIdentityProvidersPageController } from './admin/admin-identity-providers-page.controller.js';
import { FederationPagesController } from './federation/federation-pages.controller.js';
import { FederationLinkPagesController } from './federation/federation-link-pages.controller.js';
import { FederationRefusalPage } from './federation/federation-refusal-page.js';
import { FederatedSignInCompletion } from './federation/federated-sign-in-completion.js';
import { SamlPagesController } from './federation/saml-pages.controller.js';
import { OrgSamlPageController } from './orgs/org-saml-page.controller.js';
import { PasskeyCeremonies } from './sign-in/passkey-ceremonies.js';
import { OrganizationsModule } from '../organizations/organizations.module.js';
import { OrgIdentityProvidersPageController } from './orgs/org-identity-providers-page.controller.js';
import { OrgInvitationPageController } from './orgs/org-invitation-page.controller.js';
import { OrgInvitationsPageController } from './orgs/org-invitations-page.controller.js';
import { OrgAdminPages } from './orgs/org-admin-pages.js';
import { OrgPagesController } from './orgs/org-pages.controller.js';
import { OrgDomainsPageController } from './orgs/org-domains-page.controller.js';
import { OrgServiceAccountsPageController } from './orgs/org-service-accounts-page.controller.js';
import { ServiceAccountsModule } from '../service-accounts/service-accounts.module.js';
import { OrgWebhooksPageController } from './orgs/org-webhooks-page.controller.js';
import { OrgScimPageController } from './orgs/org-scim-page.controller.js';
import { ScimModule } from '../scim/scim.module.js';
import { WebhooksModule } from '../webhooks/webhooks.module.js';

/** Server-rendered pages: sign-up, sign-in, mailed links, device approval, CLI tokens, the account, people and OAuth clients (admins). */
@Module({
  imports: [UsersModule, TokensModule, DeviceLoginModule, OAuthModule, WebSessionsModule, AccountsModule, AdminModule, OrganizationsModule, ServiceAccountsModule, WebhooksModule, ScimModule],
  controllers: [AuthPagesController, DevicePageController, TokensPageController, AdminClientsPageController, AdminClientPageController, PasswordPagesController, AccountPageController,
    AdminUsersPageController, VerifyEmailPageController, InvitationPageController, EmailChangePageController,
    SecondFactorPageController, SudoPageController, SecurityPageController, PasskeysPageController, PasskeySignInController,
    ConsentPageController,
    AdminIdentityProvidersPageController, FederationPagesController, FederationLinkPagesController, SamlPagesController,
    OrgInvitationPageController, OrgInvitationsPageController, OrgPagesController, OrgIdentityProvidersPageController, OrgSamlPageController, OrgDomainsPageController, OrgServiceAccountsPageController, OrgWebhooksPageController, OrgScimPageController],
  providers: [OrgAdminPages, LocalStrategy, SignInService, DeviceCookies, SudoPages, FederationRefusalPage, FederatedSignInCompletion, PageChain, PasskeyCeremonies, ApprovalRule],
  exports: [PageChain],
})
export class WebModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    // The pages' own chain (headers, forms, session) is PageChain, which bootstrap.ts mounts.
    // The API routes a signed-in browser may call (with its CSRF token): see @AllowWebSession.
    consumer
      .apply(WebSessionMiddleware)
      .forRoutes({ path: ROUTES.issueToken, method: RequestMethod.POST }, { path: 'api/orgs', method: RequestMethod.ALL }, { path: 'api/orgs/*path', method: RequestMethod.ALL });
  }
}
