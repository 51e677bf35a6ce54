import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { AuthModule } from '../auth/auth.module.js';
import { DatabaseHealthIndicator } from './database-health.indicator.js';
import { HealthController } from './health.controller.js';
import { ShutdownState } from './shutdown-state.js';

@Module({
  imports: [TerminusModule.forRoot({ logger: false }), AuthModule],
  controllers: [HealthController],
  providers: [DatabaseHealthIndicator, ShutdownState],
  exports: [ShutdownState],
})
export class HealthModule {}
