import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { ERROR_CODES, type LiveAnswer } from '@prospect/contract';
import { RevocationListener } from '../auth/revocation-listener.js';
import { ApiException } from '../common/api-exception.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../common/error-body.filter.js';
import { ApiErrors } from '../common/openapi.js';
import { SchemaState } from '../database/schema-state.js';
import { Public } from '../auth/public.decorator.js';
import { DatabaseHealthIndicator } from './database-health.indicator.js';
import { SERVICE_VERSION } from './service-version.js';
import { ShutdownState } from './shutdown-state.js';

/** A database that takes longer than this to answer `SELECT 1` counts as down. */
const PING_TIMEOUT_MS = 1_500;

@ApiTags('health')
@Controller('api/health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabaseHealthIndicator,
    private readonly indicators: HealthIndicatorService,
    private readonly revocations: RevocationListener,
    private readonly shutdown: ShutdownState,
    private readonly schema: SchemaState,
  ) {}

  @Get('live')
  @Public()
  @ApiOperation({
    summary: "Liveness: the process serves requests, and the service's version. Never touches the database, so an outage does not get healthy processes killed.",
  })
  live(): LiveAnswer {
    return { status: 'ok', version: SERVICE_VERSION };
  }

  @Get('ready')
  @Public()
  @HealthCheck()
  @ApiOperation({
    summary:
      'Readiness: the instance is not shutting down, the database answers within its timeout, no migration is pending, and revocations reach this instance (its listener is connected).',
  })
  @ApiErrors([503, 'Not ready; the message names the failing part.'])
  ready() {
    return this.answer([
      () => {
        const serving = this.indicators.check('serving');
        return this.shutdown.stopping ? serving.down({ message: 'shutting down' }) : serving.up();
      },
      () => this.database.pingCheck('database', { timeout: PING_TIMEOUT_MS }),
      async () => {
        const migrations = this.indicators.check('migrations');
        try {
          return (await this.schema.migrationsPending()) ? migrations.down({ message: 'pending' }) : migrations.up();
        } catch {
          return migrations.down({ message: 'cannot be read' });
        }
      },
      () => {
        const listener = this.indicators.check('revocationListener');
        return this.revocations.listening ? listener.up() : listener.down({ message: 'not connected' });
      },
    ], (failing) => `Not ready: ${failing} down.`);
  }

  @Get()
  @Public()
  @HealthCheck()
  @ApiOperation({ summary: 'Liveness and database reachability.' })
  @ApiErrors([503, 'The database is unreachable.'])
  check() {
    return this.answer([() => this.database.pingCheck('database', { timeout: PING_TIMEOUT_MS })], (failing) => `Unhealthy: ${failing} unreachable.`);
  }

  /** Terminus's checks, with a 503 in our error body that names what is down (terminus's own body differs). */
  private async answer(checks: Parameters<HealthCheckService['check']>[0], refusal: (failing: string) => string) {
    try {
      return await this.health.check(checks);
    } catch (err) {
      if (!(err instanceof ServiceUnavailableException)) throw err;
      const failing = Object.keys((err.getResponse() as { error?: object }).error ?? {});
      throw new ApiException(503, ERROR_CODES.unavailable, refusal(failing.join(', ') || 'a dependency'), {
        'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS),
      });
    }
  }
}
