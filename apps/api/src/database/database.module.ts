import { type DynamicModule, Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DatabaseAvailability } from './database-availability.js';
import { BackgroundWrites } from './background-writes.js';
import { DATABASE_SETTINGS, DatabaseInfo, type DatabaseSettings } from './database-info.js';
import { MigrationsPendingError, prepareSchema } from './migrations-runner.js';
import { Sql } from './sql.js';
import { typeOrmOptions } from './typeorm-options.js';

@Global()
@Module({})
export class DatabaseModule {
  /** @param url the Postgres server, real or embedded, resolved before Nest starts. */
  static forRoot(database: DatabaseInfo, poolSize: number): DynamicModule {
    // useFactory sees the settings, dataSourceFactory only the options it returned: this carries the rest across.
    let migrateOnStart = true;
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [DATABASE_SETTINGS],
          useFactory: (settings: DatabaseSettings) => {
            migrateOnStart = settings.migrateOnStart;
            return {
              ...typeOrmOptions(database.url, poolSize, settings.timeoutMs),
              autoLoadEntities: true,
              retryAttempts: 2,
              retryDelay: 1000,
              // Pending migrations are a decision to make, not a database to wait for.
              toRetry: (err: unknown) => !(err instanceof MigrationsPendingError),
            };
          },
          dataSourceFactory: async (options) => {
            const dataSource = await new DataSource(options!).initialize();
            try {
              await prepareSchema(dataSource, { migrateOnStart, embedded: database.embedded });
            } catch (err) {
              await dataSource.destroy();
              throw err;
            }
            return dataSource;
          },
        }),
      ],
      providers: [{ provide: DatabaseInfo, useValue: database }, Sql, DatabaseAvailability, BackgroundWrites],
      exports: [DatabaseInfo, Sql, DatabaseAvailability, BackgroundWrites],
    };
  }
}
