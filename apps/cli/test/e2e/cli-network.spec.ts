/**
 * The CLI where teams run it (issue #48): behind a proxy that only lets CONNECT through, and in
 * front of a server whose certificate comes from the organization's own CA. The proxy, the CA and
 * the HTTPS server are real (test/support/connect-proxy.ts, test-ca.ts); the built binary runs as
 * a child process, since Node reads NODE_EXTRA_CA_CERTS only at process start.
 */
import { connectProxy } from '../support/connect-proxy.js';
import { deviceStart, fakeBackend, inAnHour, json, user } from '../support/fake-backend.js';
import { box, useSandbox } from '../support/e2e-suite.js';
import { httpsBackend, makeTestCa } from '../support/test-ca.js';

useSandbox();

const TOKEN = `prs_${'a'.repeat(43)}`;

/** A server that logs in by device (one pending poll, then authorized) and answers /me. */
const loginRoutes = (url: () => string) => {
  let polls = 0;
  return {
    'GET /api/cli/auth/me': (_q: unknown, _b: unknown, res: Parameters<typeof json>[0]) => json(res, 200, { user, expiresAt: inAnHour() }),
    'POST /api/cli/auth/device/start': (_q: unknown, _b: unknown, res: Parameters<typeof json>[0]) => json(res, 200, deviceStart(url())),
    'POST /api/cli/auth/device/poll': (_q: unknown, _b: unknown, res: Parameters<typeof json>[0]) =>
      json(res, 200, ++polls < 2 ? { status: 'pending' } : { status: 'authorized', accessToken: TOKEN, expiresAt: inAnHour(), user }),
  };
};

let proxy: Awaited<ReturnType<typeof connectProxy>>;
beforeEach(async () => (proxy = await connectProxy()));
afterEach(() => proxy.close());

describe('HTTP_PROXY, HTTPS_PROXY and NO_PROXY', () => {
  let backend: Awaited<ReturnType<typeof fakeBackend>>;
  beforeEach(async () => (backend = await fakeBackend(loginRoutes(() => backend.url))));
  afterEach(() => backend.close());

  /** A device login, a verified whoami and an API call: every kind of request a command makes. */
  const runEveryKind = async (env: Record<string, string>) => {
    const login = await box.run(['auth:login', '--api-url', backend.url], { env });
    expect(login).toMatchObject({ code: 0 });
    expect((await box.run(['auth:whoami', '--verify'], { env: { PROSPECT_API_BASE_URL: backend.url, ...env } })).code).toBe(0);
    expect((await box.run(['api', '/api/cli/auth/me'], { env: { PROSPECT_API_BASE_URL: backend.url, ...env } })).code).toBe(0);
    expect(backend.requests.map((r) => `${r.method} ${r.url}`)).toEqual(
      expect.arrayContaining(['POST /api/cli/auth/device/start', 'POST /api/cli/auth/device/poll', 'GET /api/cli/auth/me']),
    );
  };

  it.each(['HTTP_PROXY', 'http_proxy'])('%s: every request of every command goes through the proxy', async (variable) => {
    await runEveryKind({ [variable]: proxy.url });
    const target = new URL(backend.url).host;
    expect(proxy.tunnels.length).toBeGreaterThanOrEqual(3); // a process each, at least
    expect(new Set(proxy.tunnels)).toEqual(new Set([target]));
    // Each request the server got came in on a connection the proxy opened.
    expect(backend.requests.filter((r) => !proxy.upstreamPorts.has(r.remotePort!))).toEqual([]);
    expect(proxy.plainRequests).toEqual([]);
  });

  it.each([
    ['NO_PROXY', '127.0.0.1'],
    ['no_proxy', 'localhost,127.0.0.1'],
    ['NO_PROXY', '*'],
  ])('%s=%s: nothing goes through the proxy', async (variable, value) => {
    await runEveryKind({ HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url, [variable]: value });
    expect(proxy.tunnels).toEqual([]);
    expect(proxy.plainRequests).toEqual([]);
  });

  it('NO_PROXY naming another host leaves this one proxied', async () => {
    await runEveryKind({ HTTP_PROXY: proxy.url, NO_PROXY: 'example.com,.internal' });
    expect(proxy.tunnels.length).toBeGreaterThanOrEqual(3);
  });

  it('a proxy that is not there: one line naming the failure', async () => {
    const gone = await connectProxy();
    await gone.close();
    const run = await box.run(['api', '/api/cli/auth/me'], { env: { PROSPECT_TOKEN: TOKEN, PROSPECT_API_BASE_URL: backend.url, HTTP_PROXY: gone.url } });
    expect(run.code).toBe(1);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(backend.requests).toEqual([]);
  });
});

describe("a server whose certificate comes from the organization's CA", () => {
  let ca: Awaited<ReturnType<typeof makeTestCa>>;
  beforeAll(async () => (ca = await makeTestCa()));
  afterAll(() => ca.cleanup());

  const serve = async (altNames: string, days?: number) => {
    const server = await httpsBackend(await ca.serverCert(altNames, days), loginRoutes(() => server.url));
    return server;
  };
  const me = (url: string, env: Record<string, string> = {}) =>
    box.run(['api', '/api/cli/auth/me'], { env: { PROSPECT_TOKEN: TOKEN, PROSPECT_API_BASE_URL: url, ...env } });

  it('is refused without NODE_EXTRA_CA_CERTS, in one line naming it', async () => {
    const server = await serve('IP:127.0.0.1,DNS:localhost');
    try {
      const run = await me(server.url);
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `Error: Cannot trust 127.0.0.1:${server.port}: its certificate is signed by an authority this machine does not know (UNABLE_TO_VERIFY_LEAF_SIGNATURE); if that is your organization's CA, set NODE_EXTRA_CA_CERTS to its PEM file.\n`,
      );
      expect(server.requests).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('is accepted with NODE_EXTRA_CA_CERTS naming the CA: a device login and a call, directly and through HTTPS_PROXY', async () => {
    const server = await serve('IP:127.0.0.1,DNS:localhost');
    try {
      const env = { NODE_EXTRA_CA_CERTS: ca.caPath };
      const login = await box.run(['auth:login', '--api-url', server.url], { env });
      expect(login.stderr).not.toContain('Error');
      expect(login.code).toBe(0);
      expect((await me(server.url, env)).code).toBe(0);
      expect(proxy.tunnels).toEqual([]);

      const proxied = await me(server.url, { ...env, HTTPS_PROXY: proxy.url });
      expect(proxied).toMatchObject({ code: 0 });
      expect(proxy.tunnels).toEqual([`127.0.0.1:${server.port}`]);
      expect(server.requests.at(-1)).toMatchObject({ url: '/api/cli/auth/me', remotePort: expect.any(Number) });
      expect(proxy.upstreamPorts.has(server.requests.at(-1)!.remotePort!)).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('through a proxy too, an unknown CA is refused in the same one line', async () => {
    const server = await serve('IP:127.0.0.1');
    try {
      const run = await me(server.url, { HTTPS_PROXY: proxy.url });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^Error: Cannot trust 127\.0\.0\.1:\d+: .*NODE_EXTRA_CA_CERTS.*\n$/);
      expect(proxy.tunnels.length).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('a self-signed server certificate is named as such', async () => {
    const { execFileSync } = await import('node:child_process');
    const { mkdtemp, readFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = await mkdtemp(join(tmpdir(), 'prospect-self-signed-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'k.pem', '-out', 'c.pem', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { cwd: dir, stdio: 'pipe' });
    const server = await httpsBackend({ key: await readFile(join(dir, 'k.pem')), cert: await readFile(join(dir, 'c.pem')) }, {});
    try {
      const run = await me(server.url);
      expect(run.stderr).toMatch(/^Error: Cannot trust 127\.0\.0\.1:\d+: its certificate is signed by a self-signed chain \(DEPTH_ZERO_SELF_SIGNED_CERT\); .*NODE_EXTRA_CA_CERTS.*\n$/);
    } finally {
      await server.close();
    }
  });

  it('an expired certificate: one line saying so, even with the CA trusted', async () => {
    const server = await serve('IP:127.0.0.1', -1);
    try {
      const run = await me(server.url, { NODE_EXTRA_CA_CERTS: ca.caPath });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^Error: Cannot trust 127\.0\.0\.1:\d+: its certificate has expired \(CERT_HAS_EXPIRED\); [^\n]*\n$/);
    } finally {
      await server.close();
    }
  });

  it('a certificate for another host name: one line naming the names it is for', async () => {
    const server = await serve('DNS:prospect.example.com');
    try {
      const run = await me(server.url, { NODE_EXTRA_CA_CERTS: ca.caPath });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^Error: Cannot trust 127\.0\.0\.1:\d+: its certificate is for another host name \(it names prospect\.example\.com\); [^\n]*\n$/);
    } finally {
      await server.close();
    }
  });
});

describe('a proxy that refuses the tunnel', () => {
  it('407: one line saying the proxy wants credentials, where they go', async () => {
    const { createServer } = await import('node:http');
    const refusing = createServer();
    refusing.on('connect', (_req, socket) => socket.end('HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="corp"\r\nContent-Length: 0\r\n\r\n'));
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = refusing.address() as import('node:net').AddressInfo;
      const run = await box.run(['api', '/api/cli/auth/me'], { env: { PROSPECT_TOKEN: TOKEN, PROSPECT_API_BASE_URL: 'https://prospect.example.com', HTTPS_PROXY: `http://127.0.0.1:${port}` } });
      expect(run.code).toBe(1);
      expect(run.stderr.split('\n')[0]).toBe(
        'Error: Cannot reach https://prospect.example.com (the proxy refused to carry the request: HTTP 407, it wants credentials (http://user:password@host:port in HTTPS_PROXY)).',
      );
    } finally {
      refusing.close();
    }
  });
});
