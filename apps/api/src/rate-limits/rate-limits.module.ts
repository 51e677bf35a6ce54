import { Global, Module } from '@nestjs/common';
import { RateLimits } from './rate-limits.js';

@Global()
@Module({
  providers: [RateLimits],
  exports: [RateLimits],
})
export class RateLimitsModule {}
