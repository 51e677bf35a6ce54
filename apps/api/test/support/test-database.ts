import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { migrateDatabase } from '../../src/database/migrations-runner.js';

export interface TestDatabase {
  url: string;
  /** `server` when TEST_DATABASE_URL is set, `embedded` otherwise. */
  kind: 'server' | 'embedded';
  drop(): Promise<void>;
}

/**
 * A fresh database for one test file: a new database on the server of TEST_DATABASE_URL (CI), or
 * an in-memory embedded Postgres. Empty, unless `migrated`: then, on a server, a copy of the run's
 * template database, which has every migration applied (see migratedTemplate); an app started on
 * it finds nothing to apply. The embedded database has no templates: it stays empty there and the
 * app's start migrates it, as it always did.
 */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    const embedded = await startEmbeddedPostgres('memory://');
    return { url: embedded.url, kind: 'embedded', drop: () => embedded.stop() };
  }
  const name = `prospect_test_${randomBytes(6).toString('hex')}`;
  const template = options.migrated ? await migratedTemplate(serverUrl) : undefined;
  await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`));
  return {
    url: databaseUrl(serverUrl, name),
    kind: 'server',
    drop: () => withClient(serverUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** Key of the advisory lock under which a run's template is built ('prtm'). */
const TEMPLATE_LOCK = 0x7072746d;

/**
 * The run's template database, migrated once, by the first file that asks for it: copying it
 * (CREATE DATABASE … TEMPLATE, a tenth of a second) instead of applying the ~50 migrations in every
 * test file's database saves about 2 s of both cores per file (docs/testing.md). Its name is the
 * run's own (jest's globalSetup; its globalTeardown drops it), so a run
 * always copies the migrations it is testing. Race-free across workers: built under an advisory lock
 * under another name and renamed once migrated, so a database of that name is always complete.
 * Undefined when jest was started without the globalSetup (another config): each file migrates.
 */
async function migratedTemplate(serverUrl: string): Promise<string | undefined> {
  // Named by jest's globalSetup (template-database-setup.mjs).
  const template = process.env.PROSPECT_TEST_TEMPLATE;
  if (!template) return undefined;
  const exists = async (c: pg.Client) => ((await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [template])).rowCount ?? 0) > 0;
  await withClient(serverUrl, async (c) => {
    if (await exists(c)) return;
    await c.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK]);
    try {
      if (await exists(c)) return;
      const building = `${template}_building`;
      // Left by a file that failed while building it.
      await c.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      await c.query(`CREATE DATABASE ${building}`);
      // `npm run migrate`'s own path; its connections are closed when it returns, as a template needs.
      await migrateDatabase(databaseUrl(serverUrl, building), { embedded: false, timeoutMs: 60_000 });
      await c.query(`ALTER DATABASE ${building} RENAME TO ${template}`);
    } finally {
      await c.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
    }
  });
  return template;
}

function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
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
