import { Module } from '@nestjs/common';
import { OrganizationsModule } from '../organizations/organizations.module.js';
import { RateLimitsModule } from '../rate-limits/rate-limits.module.js';
import { UsersModule } from '../users/users.module.js';
import { AccountLinks } from './account-links.js';
import { AccountService } from './account.service.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { PasswordResetService } from './password-reset.service.js';
import { AccountTokensRepository } from './account-tokens.repository.js';
import { LinkRedemptions } from './link-redemptions.js';
import { EmailChangeService } from './email-change.service.js';
import { SecondFactorsRepository } from './second-factors.repository.js';
import { PasskeysRepository } from './passkeys.repository.js';
import { PasskeysService } from './passkeys.service.js';
import { SecondFactorsService } from './second-factors.service.js';
import { ServerSecretsModule } from '../server-secrets/server-secrets.module.js';
import { EmailVerificationService } from './email-verification.service.js';
import { InvitationsService } from './invitations.service.js';
import { SignUpService } from './sign-up.service.js';

/** A person's account: sign-up, mailed links (reset, verification, invitation, new address), second factors, and what they change when signed in (the pages are web/'s). */
@Module({
  imports: [RateLimitsModule, TokensModule, WebSessionsModule, UsersModule, ServerSecretsModule, OrganizationsModule],
  providers: [PasswordResetService, AccountTokensRepository, LinkRedemptions, AccountLinks, AccountService, EmailVerificationService, InvitationsService, SignUpService, EmailChangeService, SecondFactorsService, SecondFactorsRepository, PasskeysService, PasskeysRepository],
  exports: [PasswordResetService, AccountLinks, AccountService, EmailVerificationService, InvitationsService, SignUpService, EmailChangeService, SecondFactorsService, PasskeysService],
})
export class AccountsModule {}
