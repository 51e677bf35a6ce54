import { type DynamicModule, Global, Module } from '@nestjs/common';
import { BackgroundWrites } from '../common/background-writes.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from './app-config.js';

/** Makes the validated configuration, the clock and background writes injectable everywhere. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig, clock: Clock = new Clock()): DynamicModule {
    return {
      module: ConfigModule,
      providers: [
        { provide: AppConfig, useValue: config },
        { provide: Clock, useValue: clock },
        BackgroundWrites,
      ],
      exports: [AppConfig, Clock, BackgroundWrites],
    };
  }
}
