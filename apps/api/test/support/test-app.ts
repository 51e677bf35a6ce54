import { PassThrough } from 'node:stream';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DataSource } from 'typeorm';
import { createApp } from '../../src/bootstrap.js';
import type { Clock } from '../../src/common/clock.js';
import { AppConfig } from '../../src/config/app-config.js';
import { EMBEDDED_POOL_SIZE } from '../../src/database/embedded-postgres.js';
import { createLogger } from '../../src/logging/logger.js';
import { startApiProcess } from './api-process.js';
import type { Target } from './http.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** Per-address limits high enough for a test file's traffic, all from 127.0.0.1. */
export const UNLIMITED_ADDRESS = {
  SIGNIN_PER_IP_PER_HOUR: '100000',
  SIGNUP_PER_IP_PER_HOUR: '100000',
  DEVICE_START_PER_IP_PER_MINUTE: '100000',
  PASSWORD_RESETS_PER_IP_PER_HOUR: '100000',
};

export interface TestApp {
  app: NestExpressApplication;
  /** e.g. http://127.0.0.1:41234, no trailing slash */
  baseUrl: string;
  config: AppConfig;
  database: TestDatabase;
  dataSource: DataSource;
  /** Every log line the app wrote, as text. */
  logs(): string;
  /** Closes the app; also drops the database unless it was passed in. */
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** Share one database between several app instances. */
  database?: TestDatabase;
  /** Point the app at another URL than the database's (e.g. through a proxy). */
  databaseUrl?: string;
}

/**
 * The real application, on a real HTTP port, on a fresh migrated database: what
 * `npm start` runs, minus the process. Logs are captured at debug level so
 * tests can check that no secret is ever written.
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase({ migrated: true }));
  const ownsDatabase = !options.database;
  // Every test client is 127.0.0.1: the per-address limits are lifted unless a test sets them.
  const databaseUrl = options.databaseUrl ?? database.url;
  // DATABASE_URL as the process would have it (settings such as DATABASE_DIRECT_URL are checked against it).
  const env = { NODE_ENV: 'test', LOG_LEVEL: 'debug', PORT: '0', DATABASE_URL: databaseUrl, ...UNLIMITED_ADDRESS, ...options.env };
  const logStream = new PassThrough();
  const lines: string[] = [];
  logStream.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')));

  const app = await createApp(
    { env, databaseUrl, embedded: database.kind === 'embedded', poolSize: database.kind === 'embedded' ? EMBEDDED_POOL_SIZE : 4, clock: options.clock },
    createLogger(env.LOG_LEVEL, logStream),
  );
  const config = app.get(AppConfig);
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const baseUrl = `http://127.0.0.1:${port}`;
  // Verification URLs must point at this instance unless the test chose PUBLIC_URL.
  if (!options.env?.PUBLIC_URL) Object.assign(config, { publicUrl: baseUrl });

  return {
    app,
    baseUrl,
    config,
    database,
    dataSource: app.get(DataSource),
    logs: () => lines.join(''),
    async close() {
      await app.close();
      if (ownsDatabase) await database.drop();
    },
  };
}

/** Another replica of the API on the same database as `primary`, reached over HTTP. */
export interface Replica {
  /** For the supertest helpers: the app in this process, or the spawned process's base URL. */
  target: Target;
  close(): Promise<void>;
}

/**
 * A second replica, as production runs one: its own process (`node dist/main.js`)
 * on the same Postgres server. Not a second app in this process: passport keeps its
 * strategies in one process-wide registry, so the later app's `bearer` strategy (and
 * its token cache) would answer for both. On the embedded database, which belongs
 * to one process, the replica is a second app here; its cache is off, so the shared
 * registry changes nothing there.
 */
export async function startReplica(primary: TestApp, clock?: Clock, env: Record<string, string> = {}): Promise<Replica> {
  if (primary.database.kind === 'embedded') {
    const app = await startTestApp({ clock, database: primary.database, env });
    return { target: app, close: () => app.close() };
  }
  const proc = await startApiProcess({ DATABASE_URL: primary.database.url, LOG_LEVEL: 'warn', ...env });
  return {
    target: proc.baseUrl,
    close: async () => void (await proc.stop()),
  };
}
