import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';

export interface TestDatabase {
  url: string;
  /** `server` when TEST_DATABASE_URL is set, `embedded` otherwise. */
  kind: 'server' | 'embedded';
  drop(): Promise<void>;
}

/**
 * A fresh, empty database for one test file: a new database on the server of
 * TEST_DATABASE_URL (CI), or an in-memory embedded Postgres.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    const embedded = await startEmbeddedPostgres('memory://');
    return { url: embedded.url, kind: 'embedded', drop: () => embedded.stop() };
  }
  const name = `prospect_test_${randomBytes(6).toString('hex')}`;
  await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    kind: 'server',
    drop: () => withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** One connection to `url` for `fn`, closed after it, for the few statements a test runs past the app. */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
