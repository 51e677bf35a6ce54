import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Grant } from './grant.entity.js';
import { GrantsRepository } from './grants.repository.js';
import { GrantsService } from './grants.service.js';

/** Grants: the record of one approval, which tokens hang off (grant-rules.ts, approval-rules.ts: the rules they answer to). */
@Module({
  imports: [TypeOrmModule.forFeature([Grant])],
  providers: [GrantsService, GrantsRepository],
  // Services only: the repository stays inside (issue #37).
  exports: [GrantsService],
})
export class GrantsModule {}
