import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { AdminEventsController } from './admin-events.controller.js';
import { AccountsModule } from '../accounts/accounts.module.js';
import { OAuthModule } from '../oauth/oauth.module.js';
import { RateLimitsModule } from '../rate-limits/rate-limits.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { UsersModule } from '../users/users.module.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { AdminMailController } from './admin-mail.controller.js';
import { AdminUsersController } from './admin-users.controller.js';
import { AdminUsersService } from './admin-users.service.js';
import { OAuthClientsController } from './oauth-clients.controller.js';
import { SignInBlocksController } from './sign-in-blocks.controller.js';
import { SignInBlocksService } from './sign-in-blocks.service.js';
import { IdentityProvidersController } from './identity-providers.controller.js';

/** What administrators do: the JSON API (bearer token of an admin); the pages (web/) use the same services. */
@Module({
  imports: [EventsModule, UsersModule, OAuthModule, TokensModule, WebSessionsModule, AccountsModule, RateLimitsModule],
  controllers: [SignInBlocksController, OAuthClientsController, AdminUsersController, AdminMailController, IdentityProvidersController, AdminEventsController],
  providers: [SignInBlocksService, AdminUsersService],
  exports: [AdminUsersService],
})
export class AdminModule {}
