import { type DynamicModule, Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DatabaseAvailability } from './database-availability.js';
import { BackgroundWrites } from './background-writes.js';
import { DATABASE_SETTINGS, DatabaseInfo, type DatabaseSettings } from './database-info.js';
import { MigrationsPendingError, prepareSchema } from './migrations-runner.js';
import { asPoolerSetupError, checkServerStatementTimeout, PoolerSetupError } from './pooler.js';
import { Sql } from './sql.js';
import { typeOrmOptions } from './typeorm-options.js';
import { UnitOfWork } from './unit-of-work.js';
import { SchemaState } from './schema-state.js';

@Global()
@Module({})
export class DatabaseModule {
  /**
   * @param url the Postgres server, real or embedded, resolved before Nest starts (or the
   *   pooler in front of a server: DATABASE_DIRECT_URL then names the server).
   */
  static forRoot(url: string, embedded: boolean, poolSize: number): DynamicModule {
    const infoFrom = (settings: DatabaseSettings) => new DatabaseInfo(url, embedded, settings);
    // useFactory sees the settings, dataSourceFactory only the options it returned: this carries the rest across.
    let settings: DatabaseSettings;
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [DATABASE_SETTINGS],
          useFactory: (given: DatabaseSettings) => {
            settings = given;
            return {
              ...typeOrmOptions(url, poolSize, settings.timeoutMs, infoFrom(settings).behindPooler),
              autoLoadEntities: true,
              retryAttempts: 2,
              retryDelay: 1000,
              // A decision to make, not a database to wait for.
              toRetry: (err: unknown) => !(err instanceof MigrationsPendingError || err instanceof PoolerSetupError),
            };
          },
          dataSourceFactory: async (options) => {
            const database = infoFrom(settings);
            const dataSource = await new DataSource(options!).initialize().catch((err: unknown) => {
              throw asPoolerSetupError(err, database) ?? err;
            });
            try {
              await prepareSchema(dataSource, database, settings);
              await checkServerStatementTimeout(dataSource, database, settings.timeoutMs);
            } catch (err) {
              await dataSource.destroy();
              throw err;
            }
            return dataSource;
          },
        }),
      ],
      providers: [{ provide: DatabaseInfo, inject: [DATABASE_SETTINGS], useFactory: infoFrom }, Sql, UnitOfWork, SchemaState, DatabaseAvailability, BackgroundWrites],
      exports: [DatabaseInfo, Sql, UnitOfWork, SchemaState, DatabaseAvailability, BackgroundWrites],
    };
  }
}
