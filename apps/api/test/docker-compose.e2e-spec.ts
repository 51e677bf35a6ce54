import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { AppConfig, EnvSchema } from '../src/config/app-config.js';

/** No Docker engine runs where we test, so the compose file is checked by reading it. */
describe('docker-compose.yml', () => {
  let compose: {
    services: Record<string, { image?: string; build?: { context: string; dockerfile: string }; environment?: Record<string, string>; ports?: string[]; depends_on?: Record<string, { condition: string }>; healthcheck?: { test: string[] }; volumes?: string[] }>;
    volumes: Record<string, unknown>;
  };
  beforeAll(async () => {
    compose = parse(await readFile(new URL('../../../docker-compose.yml', import.meta.url), 'utf8'));
  });

  it('runs the official Postgres image with a health check and a named volume', () => {
    const postgres = compose.services.postgres!;
    expect(postgres.image).toMatch(/^postgres:\d+/);
    expect(postgres.healthcheck?.test.join(' ')).toContain('pg_isready');
    const [volume] = postgres.volumes![0]!.split(':');
    expect(Object.keys(compose.volumes)).toContain(volume);
  });

  it('builds the API from its Dockerfile and waits for a healthy database', async () => {
    const api = compose.services.api!;
    expect(api.build).toEqual({ context: '.', dockerfile: 'apps/api/Dockerfile' });
    await expect(readFile(new URL('../Dockerfile', import.meta.url), 'utf8')).resolves.toContain('apps/api/dist/main.js');
    expect(api.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
  });

  it("gives the API only variables the config schema knows, valid together, pointing at the compose database", () => {
    const env = compose.services.api!.environment!;
    const known = Object.keys(EnvSchema.shape);
    for (const name of Object.keys(env)) expect(known).toContain(name);

    const config = AppConfig.fromEnv(env);
    const pg = compose.services.postgres!.environment!;
    const db = new URL(config.databaseUrl!);
    expect(db.hostname).toBe('postgres');
    expect(db.username).toBe(pg.POSTGRES_USER);
    expect(db.password).toBe(pg.POSTGRES_PASSWORD);
    expect(db.pathname).toBe(`/${pg.POSTGRES_DB}`);
    expect(compose.services.api!.ports).toContain(`${config.port}:${config.port}`);
    expect(config.publicUrl).toBe(`http://localhost:${config.port}`);
  });
});
