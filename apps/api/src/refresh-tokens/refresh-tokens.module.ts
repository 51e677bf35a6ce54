import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TokensModule } from '../tokens/tokens.module.js';
import { RefreshToken } from './refresh-token.entity.js';
import { RefreshTokensRepository } from './refresh-tokens.repository.js';
import { RefreshTokensService } from './refresh-tokens.service.js';

/** Refresh tokens: a device login's session, rotated on every use. */
@Module({
  imports: [TypeOrmModule.forFeature([RefreshToken]), TokensModule],
  providers: [RefreshTokensService, RefreshTokensRepository],
  exports: [RefreshTokensService],
})
export class RefreshTokensModule {}
