import { DataSource } from 'typeorm';
import { typeOrmOptions } from '../../src/database/typeorm-options.js';
import { createTestDatabase } from './test-database.js';

/** A fresh database and a connection to it that runs no migration by itself: for the specs that apply and revert them. `close` also drops the database. */
export async function unmigratedDatabase(): Promise<{ db: DataSource; close(): Promise<void> }> {
  const database = await createTestDatabase();
  const db = new DataSource({ ...typeOrmOptions(database.url, 1), migrationsRun: false, logging: false });
  try {
    await db.initialize();
  } catch (error) {
    await database.drop();
    throw error;
  }
  return {
    db,
    async close() {
      try {
        await db.destroy();
      } finally {
        await database.drop();
      }
    },
  };
}
