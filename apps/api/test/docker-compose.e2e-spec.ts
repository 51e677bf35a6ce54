import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ROUTES } from '@prospect/contract';
import { parse } from 'yaml';
import { AppConfig, EnvSchema } from '../src/config/app-config.js';

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

const HAPROXY_CFG = fileURLToPath(new URL('../../../deploy/haproxy/haproxy.cfg', import.meta.url));

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
    compose = parse(await readFile(new URL('../../../docker-compose.yml', import.meta.url), 'utf8'), { merge: true });
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
    await expect(readFile(new URL('../Dockerfile', import.meta.url), 'utf8')).resolves.toContain('apps/api/dist/main.js');
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
  });

  it('puts haproxy in front, with the shipped config, on the public URL’s port', () => {
    const proxy = compose.services.proxy!;
    expect(proxy.image).toMatch(/^haproxy:/);
    expect(proxy.volumes).toEqual(['./deploy/haproxy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro']);
    expect(proxy.ports).toEqual(['3000:3000']);
    expect(compose.services.api1!.ports).toBeUndefined();
  });

  it('ships an haproxy config that haproxy accepts, checking readiness and naming the compose replicas', async () => {
    const cfg = await readFile(HAPROXY_CFG, 'utf8');
    expect(cfg).toContain(`option httpchk GET ${ROUTES.healthReady}`);
    expect(cfg).toMatch(/option redispatch/);
    expect(cfg).toMatch(/option forwardfor/);
    expect(cfg).toContain('"${PROSPECT_API1-api1:3000}"');
    expect(cfg).toContain('"${PROSPECT_API2-api2:3000}"');
    const { stdout } = await promisify(execFile)('haproxy', ['-c', '-f', HAPROXY_CFG], {
      env: { ...process.env, PROSPECT_API1: '127.0.0.1:4001', PROSPECT_API2: '127.0.0.1:4002' },
    });
    expect(stdout).toContain('Configuration file is valid');
  });
});
