import { mkdtemp, readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROUTES } from '@prospect/contract';
import { runApiProcess, startApiProcess } from '../support/api-process.js';
import { client } from '../support/http.js';
import { waitFor } from '../support/eventually.js';
import { copyMigratedDataDir } from '../support/migrated-data-dir.js';
import { freePort } from '../support/throwaway-postgres.js';

describe('the API process (npm start)', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'prospect-main-'));
  });
  afterEach(() => rm(dataDir, { recursive: true, force: true }));

  it('refuses a bad variable with one line naming it, and no stack trace', async () => {
    const { code, stderr, stdout } = await runApiProcess({ PORT: 'eighty', PROSPECT_DATA_DIR: dataDir });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe('Invalid configuration: PORT must be a port number (got "eighty")\n');
  });

  it('refuses a port another process holds at once, in one line naming it and PORT, before it opens the database or prints a setup link', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const refused = await runApiProcess({ PORT: String(port), HOST: '127.0.0.1', PROSPECT_DATA_DIR: dataDir });
      expect(refused).toEqual({
        code: 1,
        stdout: '',
        stderr: `prospect-api failed to start: port ${port} is in use on 127.0.0.1: another process listens there. Stop it, or set PORT to a free port (PORT=3001 npm start; PORT=0 picks one).\n`,
      });
      // The embedded database was never opened (its directory is as it was: empty), so no setup code was made either.
      expect(await readdir(dataDir)).toEqual([]);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it('starts on the embedded database, says where to sign up and how to log in the CLI, and stops cleanly on SIGTERM', async () => {
    const api = await startApiProcess({ PROSPECT_DATA_DIR: dataDir });
    const banner = api.stdout();
    expect(banner).toContain(`Create an account:  ${api.baseUrl}/signup`);
    expect(banner).toContain(`  Organizations:      ${api.baseUrl}/orgs  (`);
    // The address it listens on, beside the public URL: behind a proxy the two differ, and each replica's banner names its own.
    expect(banner).toContain(`  Listening on:       127.0.0.1:${new URL(api.baseUrl).port}\n`);
    expect(banner).toContain(`prospect auth:login --api-url ${api.baseUrl}   (no prospect yet? npm run cli:install)`);
    // An empty database has no administrator: the banner says how to become it.
    expect(banner).toMatch(new RegExp(`First admin: +${api.baseUrl}/signup\\?setup_code=prss_[A-Za-z0-9_-]{43} `));
    await client(api.baseUrl).get(ROUTES.health).expect(200);

    // The OpenAPI document and the Swagger UI page with its assets.
    const spec = await client(api.baseUrl).get('/api/docs-json').expect(200);
    const paths = (spec.body as { paths: Record<string, Record<string, { requestBody?: { content: object } }>> }).paths;
    // Both surfaces: the contract's routes and the OAuth 2.0 endpoints (form-encoded).
    expect(Object.keys(paths)).toEqual(expect.arrayContaining(['/api/cli/auth/me', '/api/cli/auth/refresh', '/.well-known/oauth-authorization-server', '/oauth/token', '/oauth/device_authorization', '/oauth/revoke', '/oauth/introspect']));
    expect(Object.keys(paths['/oauth/token']!.post!.requestBody!.content)).toEqual(['application/x-www-form-urlencoded']);
    const ui = await client(api.baseUrl).get('/api/docs').expect(200);
    expect(ui.text).toContain('swagger-ui');
    const css = await client(api.baseUrl).get('/api/docs/swagger-ui.css').expect(200).expect('content-type', /text\/css/);
    expect(css.text.length).toBeGreaterThan(1000);

    // A keep-alive client connected at shutdown must not hold the process open.
    const agent = new http.Agent({ keepAlive: true });
    await new Promise((resolve) => http.get(`${api.baseUrl}/api/health`, { agent }, (res) => res.resume().on('end', resolve)));

    expect(await api.stop('SIGTERM')).toBe(0);
    expect(api.stdout()).toContain('"msg":"stopped"');
    agent.destroy();

    // The embedded database was closed cleanly: it opens again, with its migrations applied.
    const again = await startApiProcess({ PROSPECT_DATA_DIR: dataDir });
    await client(again.baseUrl).get(ROUTES.health).expect(200);
    expect(await again.stop('SIGINT')).toBe(0);
  });

  it('names the listening address apart from PUBLIC_URL, a replica behind a proxy', async () => {
    const port = await freePort();
    // Not a first start: an embedded database already migrated (support/migrated-data-dir.ts).
    const api = await startApiProcess({ PROSPECT_DATA_DIR: await copyMigratedDataDir(join(dataDir, 'data')), PORT: String(port), PUBLIC_URL: 'http://id.example.com:8080' });
    try {
      const banner = api.stdout();
      expect(banner).toContain('  Prospect API is running on http://id.example.com:8080\n');
      expect(banner).toContain(`\n  Listening on:       127.0.0.1:${port}\n`);
      await client(`http://127.0.0.1:${port}`).get(ROUTES.healthLive).expect(200);
    } finally {
      await api.stop();
    }
  });

  it('`migrate` without DATABASE_URL refuses in one line, naming --embedded, and opens nothing; `migrate --embedded` migrates and names it', async () => {
    const refused = await runApiProcess({ PROSPECT_DATA_DIR: dataDir }, ['migrate']);
    expect(refused).toEqual({
      code: 2,
      stdout: '',
      stderr: `Refusing to migrate: DATABASE_URL is not set, so this would migrate the embedded database in ${dataDir}. Set DATABASE_URL to your server's, or run \`migrate --embedded\` (npm run migrate -- --embedded) to migrate the embedded one.\n`,
    });
    expect(await readdir(dataDir)).toEqual([]);

    const migrated = await runApiProcess({ PROSPECT_DATA_DIR: dataDir }, ['migrate', '--embedded']);
    expect(migrated).toMatchObject({ code: 0, stderr: '' });
    expect(migrated.stdout).toMatch(new RegExp(`^Applied \\d+ migration\\(s\\) to the embedded database in ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `));
    const again = await runApiProcess({ PROSPECT_DATA_DIR: dataDir }, ['migrate', '--embedded']);
    expect(again).toEqual({ code: 0, stdout: `The embedded database in ${dataDir} is up to date.\n`, stderr: '' });

    // Asked for the embedded database where DATABASE_URL names a server: which one was meant is unclear, so neither.
    const both = await runApiProcess({ PROSPECT_DATA_DIR: dataDir, DATABASE_URL: 'postgres://prospect:s3cret@db.internal:6432/prospect' }, ['migrate', '--embedded']);
    expect(both).toEqual({
      code: 2,
      stdout: '',
      stderr: 'Refusing to migrate: --embedded asks for the embedded database, but DATABASE_URL is set (the database prospect@db.internal:6432/prospect). Unset DATABASE_URL, or drop --embedded.\n',
    });
  });

  it('finishes a request that is in flight when SIGTERM arrives', async () => {
    const api = await startApiProcess({ PROSPECT_DATA_DIR: await copyMigratedDataDir(join(dataDir, 'data')) });
    // The headers now and the body once the process is shutting down, so the request is open across the signal.
    // `Expect: 100-continue`: the server's "100 Continue" says it has read the headers, so the request is in flight.
    const { port, hostname } = new URL(api.baseUrl);
    const req = http.request({
      host: hostname,
      port,
      method: 'POST',
      path: '/api/health-does-not-exist',
      headers: { 'content-type': 'application/json', 'content-length': 2, expect: '100-continue' },
    });
    const response = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => res.resume().on('end', () => resolve(res.statusCode!)));
      req.on('error', reject);
    });
    const headersRead = new Promise<void>((resolve) => req.once('continue', resolve));
    req.flushHeaders();
    await headersRead;
    const exit = api.stop('SIGTERM');
    await waitFor('the process to start draining', () => api.stdout().includes('finishing in-flight requests'));
    req.end('{}');
    expect(await response).toBe(404);
    expect(await exit).toBe(0);
  });
});
