import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { Clock } from '../common/clock.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { WebSessionsModule } from '../web-sessions/web-sessions.module.js';
import { AccessTokenVerifier } from './access-token-verifier.js';
import { BearerAuthGuard } from './bearer-auth.guard.js';
import { BearerStrategy } from './bearer.strategy.js';
import { RefusedTokens } from './refused-tokens.js';
import { RevocationListener } from './revocation-listener.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

/**
 * Who is calling: one global guard for every route (bearer tokens through passport-http-bearer,
 * or a web session with its CSRF token where a route allows it; `@Public()` routes skip it), the
 * verified-token cache and the listener that keeps it true across replicas.
 */
@Module({
  imports: [PassportModule, TokensModule, WebSessionsModule],
  providers: [
    AccessTokenVerifier,
    BearerStrategy,
    RefusedTokens,
    { provide: VerifiedTokenCache, inject: [Clock], useFactory: (clock: Clock) => new VerifiedTokenCache(() => clock.now().getTime()) },
    RevocationListener,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
  ],
  exports: [AccessTokenVerifier, RevocationListener],
})
export class AuthModule {}
