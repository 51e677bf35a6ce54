import { type DynamicModule, Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DatabaseAvailability } from './database-availability.js';
import { BackgroundWrites } from './background-writes.js';
import { DATABASE_TIMEOUT_MS, DatabaseInfo } from './database-info.js';
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
          inject: [DATABASE_TIMEOUT_MS],
          useFactory: (timeoutMs: number) => ({ ...typeOrmOptions(database.url, poolSize, timeoutMs), autoLoadEntities: true, retryAttempts: 2, retryDelay: 1000 }),
        }),
      ],
      providers: [{ provide: DatabaseInfo, useValue: database }, Sql, DatabaseAvailability, BackgroundWrites],
      exports: [DatabaseInfo, Sql, DatabaseAvailability, BackgroundWrites],
    };
  }
}
