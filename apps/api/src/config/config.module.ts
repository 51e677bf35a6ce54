import { type DynamicModule, Global, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { DATABASE_SETTINGS, type DatabaseSettings } from '../database/database-info.js';
import { Clock } from '../common/clock.js';
import { AppConfig, type Env, EnvSchema, validateEnv } from './app-config.js';

const ENV_NAMES = Object.keys(EnvSchema.shape) as Array<keyof Env>;

/**
 * The validated configuration (through @nestjs/config, whose `validate` runs our zod
 * schema) and the clock, injectable everywhere.
 *
 * The environment is the caller's: main.ts passes process.env, a test its own record,
 * so one process can run several apps with different settings. Code reads settings
 * through the typed AppConfig, built once from ConfigService.
 */
@Global()
@Module({})
export class AppConfigModule {
  static forRoot(env: Record<string, string | undefined>, clock: Clock = new Clock()): DynamicModule {
    return {
      module: AppConfigModule,
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true, ignoreEnvVars: true, skipProcessEnv: true, validate: () => validateEnv(env) }),
      ],
      providers: [
        {
          provide: AppConfig,
          inject: [ConfigService],
          useFactory: (settings: ConfigService<Env, true>) =>
            AppConfig.fromValidEnv(Object.fromEntries(ENV_NAMES.map((name) => [name, settings.get(name, { infer: true })])) as Env),
        },
        { provide: Clock, useValue: clock },
        {
          provide: DATABASE_SETTINGS,
          inject: [AppConfig],
          useFactory: (config: AppConfig): DatabaseSettings => ({
            timeoutMs: config.databaseTimeoutMs,
            migrateOnStart: config.migrateOnStart,
            directUrl: config.databaseDirectUrl,
            preparedStatements: config.databasePreparedStatements,
          }),
        },
      ],
      exports: [AppConfig, Clock, DATABASE_SETTINGS],
    };
  }
}
