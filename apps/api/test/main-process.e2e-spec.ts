import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROUTES } from '@prospect/contract';
import { runApiProcess, startApiProcess } from './support/api-process.js';
import { client } from './support/http.js';

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

  it('starts on the embedded database, says where to sign up and how to log in the CLI, and stops cleanly on SIGTERM', async () => {
    const api = await startApiProcess({ PROSPECT_DATA_DIR: dataDir });
    const banner = api.stdout();
    expect(banner).toContain(`Create an account:  ${api.baseUrl}/signup`);
    expect(banner).toContain(`npx prospect auth:login --api-url ${api.baseUrl}`);
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

  it('finishes a request that is in flight when SIGTERM arrives', async () => {
    const api = await startApiProcess({ PROSPECT_DATA_DIR: dataDir });
    // Send the headers now and the body later, so the request is open across the signal.
    const { port, hostname } = new URL(api.baseUrl);
    const response = new Promise<number>((resolve, reject) => {
      const req = http.request(
        { host: hostname, port, method: 'POST', path: '/api/health-does-not-exist', headers: { 'content-type': 'application/json', 'content-length': 2 } },
        (res) => res.resume().on('end', () => resolve(res.statusCode!)),
      );
      req.on('error', reject);
      req.write('{');
      setTimeout(() => req.end('}'), 300);
    });
    await new Promise((r) => setTimeout(r, 100));
    const exit = api.stop('SIGTERM');
    expect(await response).toBe(404);
    expect(await exit).toBe(0);
  });
});
