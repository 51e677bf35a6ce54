import { Module } from '@nestjs/common';
import { RateLimitsModule } from '../rate-limits/rate-limits.module.js';
import { UsersModule } from '../users/users.module.js';
import { AccountService } from './account.service.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { PasswordResetService } from './password-reset.service.js';
import { PasswordResetsRepository } from './password-resets.repository.js';

/** A person's password and name: reset by a mailed link, or changed when signed in (the pages are web/'s). */
@Module({
  imports: [RateLimitsModule, TokensModule, WebSessionsModule, UsersModule],
  providers: [PasswordResetService, PasswordResetsRepository, AccountService],
  exports: [PasswordResetService, PasswordResetsRepository, AccountService],
})
export class PasswordResetModule {}
