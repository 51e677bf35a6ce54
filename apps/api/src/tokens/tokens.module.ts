import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { Clock } from '../common/clock.js';
import { UsersModule } from '../users/users.module.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { BearerAuthGuard } from './bearer-auth.guard.js';
import { BearerStrategy } from './bearer.strategy.js';
import { RefreshTokensService } from './refresh-tokens.service.js';
import { RefusedTokens } from './refused-tokens.js';
import { RevocationListener } from './revocation-listener.js';
import { TokenIssuanceService } from './token-issuance.service.js';
import { TokensController } from './tokens.controller.js';
import { TokensService } from './tokens.service.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

@Module({
  imports: [PassportModule, UsersModule, WebSessionsModule],
  controllers: [TokensController],
  providers: [
    TokensService,
    RefreshTokensService,
    TokenIssuanceService,
    BearerStrategy,
    RefusedTokens,
    { provide: VerifiedTokenCache, inject: [Clock], useFactory: (clock: Clock) => new VerifiedTokenCache(() => clock.now().getTime()) },
    RevocationListener,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
  ],
  exports: [TokensService, RefreshTokensService, TokenIssuanceService],
})
export class TokensModule {}
