import { MIGRATIONS } from '../../src/database/migrations/index.js';
import { type ApiProcess, runApiProcess, startApiProcess } from '../support/api-process.js';
import { emptyServerDatabase as emptyDatabase } from '../support/server-database.js';
import { withClient } from '../support/test-database.js';

const appliedMigrations = (url: string): Promise<string[]> =>
  withClient(url, async (client) =>
    // sql-on-purpose: the migrations table is the schema's own record
    (await client.query<{ name: string }>('SELECT name FROM migrations ORDER BY id')).rows.map((r) => r.name),
  );

/** How `migrate` names a database: user, host, port and name, never the password. */
function databaseName(url: string): string {
  const { username, hostname, port, pathname } = new URL(url);
  return `${username ? `${decodeURIComponent(username)}@` : ''}${hostname}:${port || '5432'}${decodeURIComponent(pathname)}`;
}

/** Lines a process logged at error level (pino: 50) or any stack trace. */
const errorLines = (output: string) => output.split('\n').filter((line) => line.includes('"level":50') || /^\s+at /.test(line));

describe('migrations with many instances', () => {
  let database: { url: string; drop(): Promise<void> };
  beforeEach(async () => (database = await emptyDatabase()));
  afterEach(() => database.drop());

  it('three instances started at once on an empty database all come up, each migration applied once, no error line', async () => {
    const started = await Promise.allSettled([1, 2, 3].map(() => startApiProcess({ DATABASE_URL: database.url }, 60_000)));
    const apis = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    try {
      expect(started.filter((s) => s.status === 'rejected').map((s) => String((s as PromiseRejectedResult).reason))).toEqual([]);
      for (const api of apis) {
        expect((await fetch(`${api.baseUrl}/api/health`)).status).toBe(200);
        expect(errorLines(api.stdout() + api.stderr())).toEqual([]);
      }
      expect(await appliedMigrations(database.url)).toEqual(MIGRATIONS.map((m) => m.name));
    } finally {
      await Promise.all(apis.map((api: ApiProcess) => api.stop()));
    }
  });

  it('`main.js migrate` applies what is pending and exits; run again, or three at once, it finds nothing to do', async () => {
    const first = await runApiProcess({ DATABASE_URL: database.url }, ['migrate']);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    // It names the database it migrated (issue #36), without the password.
    expect(first.stdout).toBe(`Applied ${MIGRATIONS.length} migration(s) to the database ${databaseName(database.url)}: ${MIGRATIONS.map((m) => m.name).join(', ')}\n`);
    const again = await Promise.all([1, 2, 3].map(() => runApiProcess({ DATABASE_URL: database.url }, ['migrate'])));
    for (const run of again) expect(run).toEqual({ code: 0, stdout: `The database ${databaseName(database.url)} is up to date.\n`, stderr: '' });
    expect(await appliedMigrations(database.url)).toEqual(MIGRATIONS.map((m) => m.name));
  });

  it('with MIGRATE_ON_START=false, refuses to start on a database with pending migrations, in one line; starts once `migrate` ran', async () => {
    const refused = await runApiProcess({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false', LOG_LEVEL: 'silent' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'prospect-api failed to start: the database needs migrations and MIGRATE_ON_START=false: run `npm run migrate` (or `node apps/api/dist/main.js migrate`) first\n',
    );
    expect((await runApiProcess({ DATABASE_URL: database.url }, ['migrate'])).code).toBe(0);
    const api = await startApiProcess({ DATABASE_URL: database.url, MIGRATE_ON_START: 'false' });
    try {
      expect((await fetch(`${api.baseUrl}/api/health`)).status).toBe(200);
    } finally {
      await api.stop();
    }
  });

  it('an unknown command is a usage error, before anything is opened', async () => {
    const run = await runApiProcess({ DATABASE_URL: database.url }, ['migrat']);
    expect(run).toEqual({ code: 2, stdout: '', stderr: 'Unknown command: migrat. Run without one to serve, `migrate` to apply pending migrations, `setup-code` for a new admin setup code, `purge` to delete what retention keeps no longer, or `rotate-keys` to replace the ID tokens\' signing key now.\n' });
  });
});
