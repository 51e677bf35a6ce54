import { Global, Module } from '@nestjs/common';
import { RateLimits } from './rate-limits.js';
import { RateLimitsRepository } from './rate-limits.repository.js';

@Global()
@Module({
  providers: [RateLimits, RateLimitsRepository],
  exports: [RateLimits],
})
export class RateLimitsModule {}
