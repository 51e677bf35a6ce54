import { type DynamicModule, Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config/app-config.js';
import { DatabaseAvailability } from './database-availability.js';
import { DatabaseInfo } from './database-info.js';
import { Sql } from './sql.js';
import { typeOrmOptions } from './typeorm-options.js';

@Global()
@Module({})
export class DatabaseModule {
  /** @param url the Postgres server, real or embedded, resolved before Nest starts. */
  static forRoot(database: DatabaseInfo, poolSize: number): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({ ...typeOrmOptions(database.url, poolSize, config.databaseTimeoutMs), retryAttempts: 2, retryDelay: 1000 }),
        }),
      ],
      providers: [{ provide: DatabaseInfo, useValue: database }, Sql, DatabaseAvailability],
      exports: [DatabaseInfo, Sql, DatabaseAvailability],
    };
  }
}
