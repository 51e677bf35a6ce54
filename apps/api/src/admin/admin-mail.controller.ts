import { Controller, Get, Header, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { ApiErrors, ApiJsonResponse } from '../common/openapi.js';
import { GIVEN_UP_SHOWN, MailQueue, type MailQueueState, MailQueueStateSchema } from '../mail/mail-queue.js';
import { AdminsOnlyGuard } from './admins-only.guard.js';

/** The mail outbox's state for administrators (an admin's bearer token with `admin`). */
@ApiTags('admin')
@ApiBearerAuth()
@Controller('api/admin/mail')
@RequireScope('admin')
@UseGuards(AdminsOnlyGuard)
export class AdminMailController {
  constructor(private readonly queue: MailQueue) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'The mail outbox: mails by state, the oldest one waiting, and the last ones given up with the reason (admins).',
    description: `Waiting mails are tried again with growing waits until MAIL_GIVE_UP_HOURS after they were queued; the last ${GIVEN_UP_SHOWN} given up are listed, latest first. Recipients are masked (j***@example.com), in the reasons too.`,
  })
  @ApiJsonResponse(200, 'The outbox now.', MailQueueStateSchema)
  @ApiErrors([401, 'No valid bearer token.'], [403, 'Not an admin, or the token lacks `admin`.'])
  state(): Promise<MailQueueState> {
    return this.queue.state();
  }
}
