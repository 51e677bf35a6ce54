import { Controller, Get, Header, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type EventPage, EventPageSchema } from '@prospect/contract';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonResponse } from '../common/openapi.js';
import { EventsService } from '../events/events.service.js';
import { STREAM_DESCRIPTION, streamQueries } from '../events/stream-openapi.js';
import { AdminsOnlyGuard } from './admins-only.guard.js';

// Here rather than in events/: events/ sits below webhooks/ and oauth/, which admin/ uses.
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
