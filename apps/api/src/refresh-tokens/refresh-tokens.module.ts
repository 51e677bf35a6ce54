import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { GrantsModule } from '../grants/grants.module.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { RefreshToken } from './refresh-token.entity.js';
import { RefreshTokensRepository } from './refresh-tokens.repository.js';
import { RefreshTokensService } from './refresh-tokens.service.js';

/** Refresh tokens: a grant's session, rotated on every use. */
@Module({
  imports: [TypeOrmModule.forFeature([RefreshToken]), TokensModule, GrantsModule],
  providers: [RefreshTokensService, RefreshTokensRepository],
  exports: [RefreshTokensService],
})
export class RefreshTokensModule {}
