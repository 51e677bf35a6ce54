/**
 * Two small things gh users expect (issue #48): `auth:login --hostname`, gh's name for --api-url,
 * and `prospect --version --verify`, which also says the server's version (GET /api/health/live).
 * The built binary against the real API.
 */
import { VERSION } from '../../src/version.js';
import { fakeBackend, json } from '../support/fake-backend.js';
import { cliToken } from '../support/real-api.js';
import { api, box, person, useRealApi } from '../support/e2e-suite.js';

useRealApi('version');

const API_VERSION: string = (await import('../../../api/package.json', { with: { type: 'json' } })).default.version;

describe('auth:login --hostname', () => {
  it('is --api-url', async () => {
    const run = await box.run(['auth:login', '--hostname', api.baseUrl, '--token', await cliToken(api, person)]);
    expect(run).toMatchObject({ code: 0, stdout: `Logged in as Grace Hopper <${person.email}> on ${api.baseUrl}.\n` });
    expect((await box.readSession()).apiBaseUrl).toBe(api.baseUrl);
  });

  it('given with --api-url, the two must name the same server', async () => {
    const run = await box.run(['auth:login', '--hostname', api.baseUrl, '--api-url', 'http://localhost:1', '--token', 'prs_x']);
    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe(`Error: --hostname is another name for --api-url; given both, they must agree ("${api.baseUrl}", "http://localhost:1").`);
  });

  it('a bare host name gets the scheme suggested, as --api-url does', async () => {
    const run = await box.run(['auth:login', '--hostname', 'prospect.example.com', '--token', 'prs_x']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('did you mean https://prospect.example.com?');
  });
});

describe('--version --verify', () => {
  it("prints the CLI's version, then the server's", async () => {
    const run = await box.run(['--version', '--verify'], { env: { PROSPECT_API_BASE_URL: api.baseUrl } });
    expect(run).toMatchObject({ code: 0, stdout: `${VERSION}\nServer ${api.baseUrl}: ${API_VERSION}\n`, stderr: '' });
  });

  it("asks the active session's server, and --api-url's when given", async () => {
    await box.run(['auth:login', '--api-url', api.baseUrl, '--token', await cliToken(api, person)]);
    expect((await box.run(['--version', '--verify'])).stdout).toBe(`${VERSION}\nServer ${api.baseUrl}: ${API_VERSION}\n`);
    const other = api.baseUrl.replace('127.0.0.1', 'localhost');
    expect((await box.run(['--version', '--verify', '--api-url', other])).stdout).toBe(`${VERSION}\nServer ${other}: ${API_VERSION}\n`);
  });

  it("a server that says no version: the CLI's, and that", async () => {
    const old = await fakeBackend({ 'GET /api/health/live': (_q, _b, res) => json(res, 200, { status: 'ok' }) });
    try {
      const run = await box.run(['--version', '--verify', '--api-url', old.url]);
      expect(run).toMatchObject({ code: 0, stdout: `${VERSION}\nServer ${old.url}: a version too old to say which\n` });
    } finally {
      await old.close();
    }
  });

  it("a server out of reach: the CLI's version, then one error", async () => {
    const run = await box.run(['--version', '--verify', '--api-url', 'http://127.0.0.1:1']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(`${VERSION}\n`);
    expect(run.stderr).toMatch(/^Error: Cannot reach http:\/\/127\.0\.0\.1:1 /);
  });

  it('anything else after --version is a usage error, and nothing is printed before it', async () => {
    const run = await box.run(['--version', '--verfy']);
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toBe('Error: --version takes --verify (and --api-url <url>), not "--verfy".\nUsage: prospect --version [--verify [--api-url <url>]]\n');
  });
});
