import { RequestOrigin } from '../common/request-origin.js';
import { type CanActivate, Controller, Header, Headers, HttpCode, Injectable, Ip, Post, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  CLI_CLIENT_ID,
  CLI_DEFAULT_SCOPES,
  CLI_SCOPES,
  type DeviceCancelRequest,
  DeviceCancelRequestSchema,
  type DevicePollRequest,
  DevicePollRequestSchema,
  type DevicePollResponse,
  DevicePollResponseSchema,
  type DeviceStartRequest,
  DeviceStartRequestSchema,
  type DeviceStartResponse,
  DeviceStartResponseSchema,
} from '@prospect/contract';
import { ApiErrors, ApiJsonBody, ApiJsonResponse } from '../common/openapi.js';
import { Public } from '../auth/public.decorator.js';
import { ValidBody } from '../common/valid-body.js';
import { AppConfig } from '../config/app-config.js';
import { DatabaseDeadline } from '../database/database-deadline.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { DeviceLoginService } from '../device-login/device-login.service.js';
import { deviceLoginTurnedOff, pollAnswer } from './cli-auth-answers.js';

/** With DEVICE_LOGIN_ENABLED=false the endpoints do not exist (404), whatever the body. */
@Injectable()
class DeviceLoginEnabledGuard implements CanActivate {
  constructor(private readonly deviceLogins: DeviceLoginService) {}
  canActivate(): boolean {
    if (this.deviceLogins.enabled) return true;
    throw deviceLoginTurnedOff();
  }
}

@ApiTags('cli auth')
@Controller('api/cli/auth/device')
@Public()
@UseGuards(DeviceLoginEnabledGuard)
export class DeviceLoginController {
  constructor(
    private readonly deviceLogins: DeviceLoginService,
    private readonly limits: RateLimits,
    private readonly config: AppConfig,
  ) {}

  @Post('start')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Start a device login: codes and the address where a person approves it.',
    description:
      `\`scopes\` asks for what the session may do, of ${CLI_SCOPES.map((scope) => `\`${scope}\``).join(', ')} (default ${CLI_DEFAULT_SCOPES.map((scope) => `\`${scope}\``).join(', ')}). \`admin\` is only had when asked for: its approval needs sudo mode, and it lasts ADMIN_GRANT_SECONDS from the approval.`,
  })
  @ApiJsonBody(DeviceStartRequestSchema, false)
  @ApiJsonResponse(200, 'Started.', DeviceStartResponseSchema)
  @ApiErrors(
    [400, 'Invalid body.'],
    [404, 'Device login is turned off: use a token (`prospect auth:login --token`).'],
    [429, 'Too many starts from this address (see Retry-After).'],
    [503, 'The database did not answer within DATABASE_TIMEOUT_MS (see Retry-After).'],
  )
  async start(
    @ValidBody(DeviceStartRequestSchema) body: DeviceStartRequest,
    @Ip() ip: string,
    @RequestOrigin() origin: string | undefined,
    @Headers('user-agent') userAgent?: string,
  ): Promise<DeviceStartResponse> {
    // One budget for the whole request (issue #32): the limit's wait and the insert share it.
    const deadline = DatabaseDeadline.after(this.config.databaseTimeoutMs);
    await this.limits.deviceStart(ip, deadline);
    return this.deviceLogins.start(body, ip, userAgent ?? null, undefined, origin, deadline);
  }

  @Post('cancel')
  @HttpCode(204)
  @ApiOperation({ summary: 'Stop a device login the terminal no longer waits for: it can no longer be approved. Idempotent.' })
  @ApiJsonBody(DeviceCancelRequestSchema)
  @ApiJsonResponse(204, 'Cancelled (or already over, or unknown: the answer is the same).')
  @ApiErrors([400, 'Malformed body.'])
  cancel(@ValidBody(DeviceCancelRequestSchema) body: DeviceCancelRequest, @Ip() ip: string): Promise<void> {
    return this.deviceLogins.cancel(body.deviceCode, ip);
  }

  @Post('poll')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'Poll a device login: pending, denied (also expired or used), or authorized with a token.' })
  @ApiJsonBody(DevicePollRequestSchema)
  @ApiJsonResponse(200, 'The state of the device login.', DevicePollResponseSchema)
  @ApiErrors([400, 'Unknown or malformed device code.'], [404, 'Device login is turned off.'], [429, 'slow_down: polled faster than intervalSeconds (see Retry-After).'])
  async poll(@ValidBody(DevicePollRequestSchema) body: DevicePollRequest, @Ip() ip: string): Promise<DevicePollResponse> {
    return pollAnswer(await this.deviceLogins.pollGrant(body.deviceCode, CLI_CLIENT_ID, ip), this.config.devicePollIntervalSeconds);
  }
}
