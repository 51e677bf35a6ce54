import { Controller, Get, Header, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { type EventPage, EventPageSchema } from '@prospect/contract';
import { AllowWebSession } from '../auth/allow-web-session.decorator.js';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonResponse } from '../common/openapi.js';
import { Actor, OrgMembershipGuard, RequireOrgRole } from '../organizations/org-membership.guard.js';
import type { OrgActor } from '../organizations/organizations.service.js';
import { EventsService } from './events.service.js';
import { STREAM_DESCRIPTION, streamQueries } from './stream-openapi.js';

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
