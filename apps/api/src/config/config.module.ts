import { type DynamicModule, Global, Module } from '@nestjs/common';
import { Clock } from '../common/clock.js';
import { AppConfig } from './app-config.js';

/** Makes the validated configuration and the clock injectable everywhere. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig, clock: Clock = new Clock()): DynamicModule {
    return {
      module: ConfigModule,
      providers: [
        { provide: AppConfig, useValue: config },
        { provide: Clock, useValue: clock },
      ],
      exports: [AppConfig, Clock],
    };
  }
}
