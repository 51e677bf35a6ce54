import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ROUTES } from '@prospect/contract';
import { parse } from 'yaml';
import { AppConfig, EnvSchema } from '../../src/config/app-config.js';
import { eventually } from '../support/eventually.js';
import { HAPROXY_503_BODY, HaProxy } from '../support/haproxy.js';
import { freePort } from '../support/throwaway-postgres.js';

type Service = {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test: string[] };
  volumes?: string[];
};

const HAPROXY_CFG = fileURLToPath(new URL('../../../../deploy/haproxy/haproxy.cfg', import.meta.url));

/** What compose does to `${NAME:-default}` and `${NAME:?error}` with `vars` as the environment. */
const interpolate = (env: Record<string, string>, vars: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(env).map(([k, v]) => [
      k,
      v.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, op?: string, arg?: string) => {
        if (vars[name] !== undefined) return vars[name]!;
        if (op === '-') return arg!;
        throw new Error(`${name} is required: ${arg}`);
      }),
    ]),
  );

/** No Docker engine runs where we test, so the compose file is checked by reading it, and haproxy's config by haproxy itself. */
describe('docker-compose.yml and the shipped haproxy config', () => {
  let compose: { services: Record<string, Service>; volumes: Record<string, unknown> };
  beforeAll(async () => {
    compose = parse(await readFile(new URL('../../../../docker-compose.yml', import.meta.url), 'utf8'), { merge: true });
  });

  it('runs the official Postgres image with a health check and a named volume, not published on the host', () => {
    const postgres = compose.services.postgres!;
    expect(postgres.image).toMatch(/^postgres:\d+/);
    expect(postgres.healthcheck?.test.join(' ')).toContain('pg_isready');
    const [volume] = postgres.volumes![0]!.split(':');
    expect(Object.keys(compose.volumes)).toContain(volume);
    expect(postgres.ports).toBeUndefined();
  });

  it('migrates once, in a one-shot service, before the replicas, which never migrate themselves', async () => {
    const migrate = compose.services.migrate!;
    expect(migrate.command).toEqual(['node', 'apps/api/dist/main.js', 'migrate']);
    expect(migrate.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    await expect(readFile(new URL('../../Dockerfile', import.meta.url), 'utf8')).resolves.toContain('apps/api/dist/main.js');
    for (const name of ['api1', 'api2']) {
      const api = compose.services[name]!;
      expect(api.build).toEqual({ context: '.', dockerfile: 'apps/api/Dockerfile' });
      expect(api.depends_on).toEqual({ postgres: { condition: 'service_healthy' }, migrate: { condition: 'service_completed_successfully' } });
      expect(api.environment!.MIGRATE_ON_START).toBe('false');
    }
  });

  it('gives every service only variables the config schema knows, valid together, pointing at the compose database, with the admin set', () => {
    const known = Object.keys(EnvSchema.shape);
    const pg = compose.services.postgres!.environment!;
    for (const name of ['migrate', 'api1', 'api2']) {
      const raw = compose.services[name]!.environment!;
      for (const variable of Object.keys(raw)) expect(known).toContain(variable);
      if (name === 'migrate') expect(() => interpolate(raw, {})).not.toThrow();
      else expect(() => interpolate(raw, {})).toThrow(/PROSPECT_ADMIN_PASSWORD is required/);
    }
    const config = AppConfig.fromEnv(interpolate(compose.services.api1!.environment!, { PROSPECT_ADMIN_PASSWORD: 'correct horse battery' }));
    const db = new URL(config.databaseUrl!);
    expect([db.hostname, db.username, db.password, db.pathname]).toEqual(['postgres', pg.POSTGRES_USER, pg.POSTGRES_PASSWORD, `/${pg.POSTGRES_DB}`]);
    expect(config.admin).toEqual({ email: 'admin@example.com', password: 'correct horse battery' });
    expect(config.trustProxy).toBe('uniquelocal');
    expect(config.publicUrl).toBe('http://localhost:3000');
    // Metrics for a scraper on the compose network (another container): beyond loopback, never published on the host.
    expect(config.metricsPort).toBe(9464);
    expect(config.metricsHost).toBe('0.0.0.0');
  });

  it('puts haproxy in front, with the shipped config and its 503 body, on the public URL’s port', () => {
    const proxy = compose.services.proxy!;
    expect(proxy.image).toMatch(/^haproxy:/);
    // The directory: haproxy.cfg and the 503.json it reads beside itself (`default-path config`).
    expect(proxy.volumes).toEqual(['./deploy/haproxy:/usr/local/etc/haproxy:ro']);
    const publicPort = new URL(compose.services.api1!.environment!.PUBLIC_URL!).port;
    expect(proxy.environment!.PROSPECT_PROXY_BIND).toBe(`:${publicPort}`);
    expect(proxy.ports).toContain(`${publicPort}:${publicPort}`);
    expect(compose.services.api1!.ports).toBeUndefined();
  });

  it('publishes haproxy’s stats page on the host’s loopback only, at the port it listens on in its container', () => {
    const proxy = compose.services.proxy!;
    // Bound inside the container on its own loopback (the config's default), it would be out of the host's reach.
    expect(proxy.environment!.PROSPECT_PROXY_STATS_BIND).toBe(':8404');
    expect(proxy.ports).toContain('127.0.0.1:8404:8404');
    expect(proxy.ports!.filter((p) => p.endsWith(':8404'))).toEqual(['127.0.0.1:8404:8404']);
  });

  it('probes liveness in the Dockerfile’s HEALTHCHECK, not the database check, on the PORT the container serves', async () => {
    const dockerfile = await readFile(new URL('../../Dockerfile', import.meta.url), 'utf8');
    const probe = /^HEALTHCHECK .*\\\n\s*CMD node -e "(.+)"$/m.exec(dockerfile);
    expect(probe).not.toBeNull();
    const script = probe![1]!.replace(/\\"/g, '"');
    // The probe itself, run as Docker would, against a server that answers only liveness.
    const asked: string[] = [];
    let liveStatus = 200;
    const server = http.createServer((req, res) => {
      asked.push(req.url!);
      res.writeHead(req.url === ROUTES.healthLive ? liveStatus : 503).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const env = { PATH: process.env.PATH, PORT: String((server.address() as AddressInfo).port) };
    const probeExit = () =>
      promisify(execFile)(process.execPath, ['-e', script], { env, timeout: 10_000 }).then(
        () => 0,
        (err: { code: number }) => err.code,
      );
    try {
      expect(await probeExit()).toBe(0);
      liveStatus = 503;
      expect(await probeExit()).toBe(1);
      expect(asked).toEqual([ROUTES.healthLive, ROUTES.healthLive]);
    } finally {
      server.close();
    }
  });

  it('ships an haproxy config that haproxy accepts, checking readiness and naming the compose replicas', async () => {
    const cfg = await readFile(HAPROXY_CFG, 'utf8');
    expect(cfg).toContain(`option httpchk GET ${ROUTES.healthReady}`);
    expect(cfg).toMatch(/option redispatch/);
    expect(cfg).toMatch(/option forwardfor/);
    expect(cfg).toContain('"${PROSPECT_API1-api1:3000}"');
    expect(cfg).toContain('"${PROSPECT_API2-api2:3000}"');
    // Its own default listener is clear of `npm start`'s :3000, so both run on one machine.
    expect(cfg).toContain('bind "${PROSPECT_PROXY_BIND-:8080}"');
    const { stdout } = await promisify(execFile)('haproxy', ['-c', '-f', HAPROXY_CFG], {
      env: { ...process.env, PROSPECT_API1: '127.0.0.1:4001', PROSPECT_API2: '127.0.0.1:4002' },
    });
    expect(stdout).toContain('Configuration file is valid');
  });

  describe('haproxy with the shipped config', () => {
    let replica: http.Server | undefined;
    let proxy: HaProxy | undefined;
    /** The X-Request-Id each request reached the replica with. */
    const seenByReplica: string[] = [];
    afterEach(async () => {
      await proxy?.stop();
      await new Promise((resolve) => (replica ? replica.close(resolve) : resolve(undefined)));
      [proxy, replica] = [undefined, undefined];
    });

    it('answers "no replica ready" with the service’s own JSON 503, Retry-After and the request id, and logs that id', async () => {
      // Two replicas nobody listens on: haproxy's checks take both out.
      proxy = await HaProxy.start([`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`]);
      expect(await eventually(async () => Object.values(await proxy!.serverStates()).every((state) => state.startsWith('DOWN')), 10_000)).toBe(true);

      const res = await fetch(`${proxy.url}${ROUTES.me}`, { headers: { accept: 'text/html,application/json' } });
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.headers.get('cache-control')).toBe('no-store');
      const body = await res.text();
      expect(JSON.parse(body)).toEqual({ statusCode: 503, error: 'service_unavailable', message: expect.stringMatching(/^The service is briefly unavailable\./) });
      expect(body).toBe(await readFile(HAPROXY_503_BODY, 'utf8'));
      const id = res.headers.get('x-request-id')!;
      expect(id).toMatch(/^[\w.:@/+=-]{1,128}$/);
      expect(await proxy.logLineOf(id)).toMatch(/ 503 .*<NOSRV>|<NOSRV> .* 503 /);

      // A caller's well-formed id is kept, on the answer and the log line.
      const kept = await fetch(`${proxy.url}${ROUTES.me}`, { headers: { 'x-request-id': 'ci-run-7:42' } });
      expect(kept.headers.get('x-request-id')).toBe('ci-run-7:42');
      expect(await proxy.logLineOf('ci-run-7:42')).toBeDefined();
    });

    it('passes one well-formed X-Request-Id to the replica, the one it logs: the caller’s when the API would keep it, else its own', async () => {
      replica = http.createServer((req, res) => {
        if (req.url !== ROUTES.healthReady) seenByReplica.push(String(req.headers['x-request-id']));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
      await new Promise<void>((resolve) => replica!.listen(0, '127.0.0.1', resolve));
      const address = `127.0.0.1:${(replica.address() as AddressInfo).port}`;
      proxy = await HaProxy.start([address, address]);
      await proxy.waitUntilUp('api1');
      await proxy.waitUntilUp('api2');

      const ask = (headers: Array<[string, string]>) =>
        new Promise<void>((resolve, reject) => {
          // node:http, to send a header twice (fetch would join the two values).
          const req = http.request(`${proxy!.url}${ROUTES.me}`, (res) => res.resume().on('end', resolve));
          for (const [name, value] of headers) req.appendHeader(name, value);
          req.on('error', reject).end();
        });
      await ask([]);
      await ask([['X-Request-Id', 'lb-7f3a:42']]);
      await ask([['X-Request-Id', 'a b "c"']]);
      await ask([['X-Request-Id', 'x'.repeat(129)]]);
      await ask([['X-Request-Id', 'one'], ['X-Request-Id', 'two']]);
      expect(seenByReplica).toHaveLength(5);
      expect(seenByReplica[1]).toBe('lb-7f3a:42');
      for (const [i, id] of seenByReplica.entries()) {
        expect(id).toMatch(/^[\w.:@/+=-]{1,128}$/);
        if (i !== 1) expect(id).not.toMatch(/^(lb-7f3a:42|one|two|x+)$/);
        // haproxy's line of that request names the same id.
        expect(await proxy.logLineOf(id)).toMatch(/ 200 /);
      }
      expect(new Set(seenByReplica).size).toBe(5);
    });

    it('ends TLS when given a certificate, and tells the replica how the client came (X-Forwarded-Proto), whatever the client said', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'prospect-haproxy-tls-'));
      try {
        // A self-signed certificate for localhost, and its key, in one PEM file as haproxy takes them.
        const openssl = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost'], { encoding: 'utf8' });
        expect(openssl.status).toBe(0);
        const cert = await readFile(join(dir, 'cert.pem'), 'utf8');
        await writeFile(join(dir, 'localhost.pem'), cert + (await readFile(join(dir, 'key.pem'), 'utf8')));

        const seen: Array<string | undefined> = [];
        replica = http.createServer((req, res) => {
          if (req.url !== ROUTES.healthReady) seen.push(req.headers['x-forwarded-proto'] as string | undefined);
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        });
        await new Promise<void>((resolve) => replica!.listen(0, '127.0.0.1', resolve));
        const address = `127.0.0.1:${(replica.address() as AddressInfo).port}`;
        const tlsPort = await freePort();
        proxy = await HaProxy.start([address, address], { PROSPECT_PROXY_TLS_CERT: join(dir, 'localhost.pem'), PROSPECT_PROXY_TLS_BIND: `127.0.0.1:${tlsPort}` });
        await proxy.waitUntilUp('api1');

        const overTls = await new Promise<http.IncomingMessage>((resolve, reject) =>
          https.get(`https://localhost:${tlsPort}${ROUTES.me}`, { ca: cert, lookup: (_host, _options, callback) => callback(null, [{ address: '127.0.0.1', family: 4 }]) }, (res) => resolve(res.resume())).on('error', reject),
        );
        expect(overTls.statusCode).toBe(200);
        expect(overTls.headers['strict-transport-security']).toBe('max-age=31536000');
        const plain = await fetch(`${proxy.url}${ROUTES.me}`, { headers: { 'x-forwarded-proto': 'https' } });
        expect(plain.status).toBe(200);
        expect(plain.headers.get('strict-transport-security')).toBeNull();
        expect(seen).toEqual(['https', 'http']);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
});
