import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { GrantsModule } from '../grants/grants.module.js';
import { UsersModule } from '../users/users.module.js';
import { AccessToken } from './access-token.entity.js';
import { AccessTokensRepository } from './access-tokens.repository.js';
import { AccessTokenTreesRepository } from './access-token-trees.repository.js';
import { IdempotencyKeysRepository } from './idempotency-keys.repository.js';
import { FamilyMembers } from './family-members.js';
import { TokenRevocations } from './token-revocations.js';
import { TokenRevoker } from './token-revoker.js';
import { TokensService } from './tokens.service.js';

/** Access tokens: issuing, listing and revoking them (verifying them is auth/'s). */
@Module({
  imports: [TypeOrmModule.forFeature([AccessToken]), GrantsModule, UsersModule],
  providers: [TokensService, AccessTokensRepository, AccessTokenTreesRepository, TokenRevoker, TokenRevocations, IdempotencyKeysRepository, FamilyMembers],
  // Services only: the repositories stay inside (issue #37).
  exports: [TokensService, TokenRevocations, FamilyMembers],
})
export class TokensModule {}
