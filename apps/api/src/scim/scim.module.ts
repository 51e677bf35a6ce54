import { Module } from '@nestjs/common';
import { OrganizationsModule } from '../organizations/organizations.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { ScimAdminController } from './scim-admin.controller.js';
import { ScimAdminService } from './scim-admin.service.js';
import { ScimController } from './scim.controller.js';
import { ScimDirectoryRepository } from './scim-directory.repository.js';
import { ScimProvisionedAccounts } from './scim-provisioned-accounts.js';
import { ScimProvisioningService } from './scim-provisioning.service.js';
import { ScimSettingsRepository } from './scim-settings.repository.js';
import { ScimLogInterceptor, ScimTokenGuard } from './scim-token.guard.js';
import { ScimTokensRepository } from './scim-tokens.repository.js';

/**
 * SCIM 2.0 provisioning per organization (issue #47): the `/scim/v2/{slug}/` service its directory
 * calls, and the tokens, group→role mapping, settings and provisioning log its admins manage.
 * Owns `scim_settings`, `scim_tokens`, `scim_users`, `scim_groups`, `scim_group_members`,
 * `scim_group_roles` and `scim_requests`; memberships stay organizations/'s (changed through
 * OrganizationsService, under the organization's lock), accounts users/'s. Federation asks it
 * whether the organization's directory made or deactivated an account (ScimProvisionedAccounts).
 */
@Module({
  imports: [UsersModule, TokensModule, WebSessionsModule, OrganizationsModule],
  controllers: [ScimController, ScimAdminController],
  providers: [ScimTokensRepository, ScimDirectoryRepository, ScimSettingsRepository, ScimProvisioningService, ScimProvisionedAccounts, ScimAdminService, ScimTokenGuard, ScimLogInterceptor],
  exports: [ScimAdminService, ScimProvisionedAccounts],
})
export class ScimModule {}
