import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';

/** What the readiness check asks of the schema, without handing TypeORM's DataSource out of database/. */
@Injectable()
export class SchemaState {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Whether a migration this build knows is not applied yet. */
  migrationsPending(): Promise<boolean> {
    return this.db.showMigrations();
  }
}
