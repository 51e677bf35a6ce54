import { Module } from '@nestjs/common';
import { OrganizationsModule } from '../organizations/organizations.module.js';
import { OrganizationEventsController } from './events.controller.js';
import { EventsRepository } from './events.repository.js';
import { EventsService } from './events.service.js';

/**
 * The security log as public events (issue #46, docs/events.md): the catalogue (event-catalogue.ts)
 * that reads each `auth_events` row as a documented event, and the cursor-paged stream of the
 * instance and of each organization. It writes nothing: audit/ owns `auth_events` and stays the one
 * low module every other records through; this one sits above organizations/ (whose membership
 * guard its route uses, and whose names each event shows). Webhooks will deliver the same objects.
 */
@Module({
  imports: [OrganizationsModule],
  controllers: [OrganizationEventsController],
  providers: [EventsService, EventsRepository],
  exports: [EventsService],
})
export class EventsModule {}
