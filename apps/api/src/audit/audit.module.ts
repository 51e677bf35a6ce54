import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditEventsRepository } from './audit-events.repository.js';
import { AuditService } from './audit.service.js';
import { AuthEvent } from './auth-event.entity.js';

@Global()
@Module({
  imports: [TypeOrmModule.forFeature([AuthEvent])],
  providers: [AuditService, AuditEventsRepository],
  exports: [AuditService],
})
export class AuditModule {}
