import { type DynamicModule, Module } from '@nestjs/common';
import type { Clock } from './common/clock.js';
import { AppConfigModule } from './config/config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { AdminModule } from './admin/admin.module.js';
import { AuditModule } from './audit/audit.module.js';
import { DeviceLoginModule } from './device-login/device-login.module.js';
import { HealthModule } from './health/health.module.js';
import { MailModule } from './mail/mail.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { OAuthModule } from './oauth/oauth.module.js';
import { RateLimitsModule } from './rate-limits/rate-limits.module.js';
import { ServiceAccountsModule } from './service-accounts/service-accounts.module.js';
import { RetentionModule } from './retention/retention.module.js';
import { ServerSecretsModule } from './server-secrets/server-secrets.module.js';
import { AuthModule } from './auth/auth.module.js';
import { CliAuthModule } from './cli-auth/cli-auth.module.js';
import { RefreshTokensModule } from './refresh-tokens/refresh-tokens.module.js';
import { TokensModule } from './tokens/tokens.module.js';
import { UsersModule } from './users/users.module.js';
import { WebModule } from './web/web.module.js';
import { FederationModule } from './federation/federation.module.js';
import { OrganizationsModule } from './organizations/organizations.module.js';
import { EventsModule } from './events/events.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';
import { ScimModule } from './scim/scim.module.js';

export interface AppModuleOptions {
  /** The environment to configure from (validated by AppConfigModule): process.env, or a test's own. */
  env: Record<string, string | undefined>;
  /** The Postgres to use: DATABASE_URL (a server, or a pooler with DATABASE_DIRECT_URL), or the embedded server started before Nest. */
  databaseUrl: string;
  /** True for the embedded PGlite server. */
  embedded: boolean;
  poolSize: number;
  /** Tests move time with a fake clock. */
  clock?: Clock;
}

@Module({})
export class AppModule {
  static forRoot({ env, databaseUrl, embedded, poolSize, clock }: AppModuleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(env, clock),
        DatabaseModule.forRoot(databaseUrl, embedded, poolSize),
        AuditModule,
        MetricsModule,
        MailModule,
        ServerSecretsModule,
        RateLimitsModule,
        HealthModule,
        UsersModule,
        AuthModule,
        OrganizationsModule,
        ServiceAccountsModule,
        WebhooksModule,
        ScimModule,
        TokensModule,
        RefreshTokensModule,
        DeviceLoginModule,
        CliAuthModule,
        OAuthModule,
        FederationModule,
        WebModule,
        AdminModule,
        EventsModule,
        RetentionModule,
      ],
    };
  }
}
