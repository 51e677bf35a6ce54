import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditService } from './audit.service.js';
import { AuthEvent } from './auth-event.entity.js';

@Global()
@Module({
  imports: [TypeOrmModule.forFeature([AuthEvent])],
  providers: [AuditService],
  exports: [AuditService],
})
export class AuditModule {}
