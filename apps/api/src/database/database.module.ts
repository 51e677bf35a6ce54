import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { typeOrmOptions } from './typeorm-options.js';

@Module({})
export class DatabaseModule {
  /** @param url the Postgres server, real or embedded, resolved before Nest starts. */
  static forRoot(url: string, poolSize: number): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [TypeOrmModule.forRoot({ ...typeOrmOptions(url, poolSize), retryAttempts: 2, retryDelay: 1000 })],
    };
  }
}
