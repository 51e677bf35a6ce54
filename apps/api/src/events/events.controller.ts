import { Controller, Get, Header, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { EVENTS_PAGE_DEFAULT, EVENTS_PAGE_MAX, type EventPage, EventPageSchema } from '@prospect/contract';
import { AdminsOnlyGuard } from '../admin/admins-only.guard.js';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonResponse } from '../common/openapi.js';
import { Actor, OrgMembershipGuard, RequireOrgRole } from '../organizations/org-membership.guard.js';
import type { OrgActor } from '../organizations/organizations.service.js';
import { EventsService } from './events.service.js';

const STREAM_DESCRIPTION = `Events in a stable order, oldest first, after the cursor \`after\` (none: from the oldest kept). \`next\` is the cursor to send as \`after\` next time, the same one when no event came; a cursor never skips or repeats an event, on any replica, and one older than retention just continues. docs/events.md lists the types.`;

const streamQueries =
  () =>
  (target: object, key: string | symbol, descriptor: PropertyDescriptor): void => {
    ApiQuery({ name: 'after', required: false, description: 'An event id or an earlier answer’s `next`.' })(target, key, descriptor);
    ApiQuery({ name: 'types', required: false, description: 'Comma-separated event types (all when absent).' })(target, key, descriptor);
    ApiQuery({ name: 'limit', required: false, description: `At most this many events (default ${EVENTS_PAGE_DEFAULT}, at most ${EVENTS_PAGE_MAX}).` })(target, key, descriptor);
  };

/** An organization's events, for its admins and owners (issue #46). */
@ApiTags('events')
@ApiBearerAuth()
@Controller('api/orgs')
@RequireScope('orgs')
@AllowWebSession()
export class OrganizationEventsController {
  constructor(private readonly events: EventsService) {}

  @Get(':slug/events')
  @Header('Cache-Control', 'no-store')
  @UseGuards(OrgMembershipGuard)
  @RequireOrgRole('admin', 'read its events')
  @ApiOperation({ summary: 'The organization’s events (admins and owners).', description: STREAM_DESCRIPTION })
  @streamQueries()
  @ApiJsonResponse(200, 'A page of events and the next cursor.', EventPageSchema)
  @ApiErrors([400, 'A bad cursor, type or limit.'], [401, 'No valid credential.'], [403, 'Your role may not, or the token lacks `orgs`.'], [404, 'No such organization of yours.'])
  list(@Actor() actor: OrgActor, @Query('after') after: unknown, @Query('types') types: unknown, @Query('limit') limit: unknown): Promise<EventPage> {
    return this.events.organizationPage(actor.organization.id, { after, types, limit });
  }
}

/** The instance's events, for its administrators (issue #46). */
@ApiTags('admin')
@ApiBearerAuth()
@Controller('api/admin/events')
@RequireScope('admin')
@UseGuards(AdminsOnlyGuard)
export class AdminEventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Every event of the instance (admins).', description: STREAM_DESCRIPTION })
  @streamQueries()
  @ApiJsonResponse(200, 'A page of events and the next cursor.', EventPageSchema)
  @ApiErrors([400, 'A bad cursor, type or limit.'], [401, 'No valid bearer token.'], [403, 'The bearer is not an admin, or insufficient_scope: the token lacks `admin`.'])
  list(@Query('after') after: unknown, @Query('types') types: unknown, @Query('limit') limit: unknown): Promise<EventPage> {
    return this.events.instancePage({ after, types, limit });
  }
}
