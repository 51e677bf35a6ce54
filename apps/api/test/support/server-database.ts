import { createTestDatabase, type TestDatabase } from './test-database.js';
import { ThrowawayPostgres } from './throwaway-postgres.js';

/** A Postgres server: a fresh database on TEST_DATABASE_URL's, or a cluster of this test's own. */
export async function emptyServerDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const candidate: TestDatabase = await createTestDatabase();
  if (candidate.kind === 'server') return candidate;
  await candidate.drop();
  const cluster = await ThrowawayPostgres.create();
  return { url: cluster.url, drop: () => cluster.destroy() };
}

