import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { ERROR_CODES } from '@prospect/contract';
import { ApiException } from '../common/api-exception.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../common/error-body.filter.js';
import { ApiErrors } from '../common/openapi.js';
import { Public } from '../auth/public.decorator.js';
import { DatabaseHealthIndicator } from './database-health.indicator.js';

/** A database that takes longer than this to answer `SELECT 1` counts as down. */
const PING_TIMEOUT_MS = 1_500;

@ApiTags('health')
@Controller('api/health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabaseHealthIndicator,
  ) {}

  @Get()
  @Public()
  @HealthCheck()
  @ApiOperation({ summary: 'Liveness and database reachability.' })
  @ApiErrors([503, 'The database is unreachable.'])
  async check() {
    try {
      return await this.health.check([() => this.database.pingCheck('database', { timeout: PING_TIMEOUT_MS })]);
    } catch (err) {
      if (!(err instanceof ServiceUnavailableException)) throw err;
      // Terminus's own 503 body differs from ours; name what is down in our error body.
      const failing = Object.keys((err.getResponse() as { error?: object }).error ?? {});
      throw new ApiException(503, ERROR_CODES.unavailable, `Unhealthy: ${failing.join(', ') || 'a dependency'} unreachable.`, {
        'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS),
      });
    }
  }
}
