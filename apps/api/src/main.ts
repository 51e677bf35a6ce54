import { NestFactory } from '@nestjs/core';
import type { Logger } from 'pino';
import { AppModule } from './app.module.js';
import { createLogger, PinoNestLogger } from './logging/logger.js';
import { RetentionService } from './retention/retention.service.js';
import { AppConfig, ConfigError } from './config/app-config.js';
import { createApp } from './bootstrap.js';
import { DatabaseInfo } from './database/database-info.js';
import { migrateDatabase, prepareSchema, withDataSource } from './database/migrations-runner.js';
import { Sql } from './database/sql.js';
import { ServerSecretsRepository } from './server-secrets/server-secrets.repository.js';
import { HttpDrain } from './http-drain.js';
import { ShutdownState } from './health/shutdown-state.js';
import { AdminSetupCodes } from './users/admin-setup-codes.js';
import type { EmbeddedPostgres } from './database/embedded-postgres.js';

/** Connections to a Postgres server: enough to keep 2 cores busy, few enough for many replicas. */
const SERVER_POOL_SIZE = 10;

/**
 * `main.js` serves; `main.js migrate` applies pending migrations, `main.js setup-code` prints a new
 * admin setup code, `main.js purge` runs the hourly retention purge once (after a large import, or
 * from a scheduler of its own); each then exits.
 */
const COMMANDS = ['migrate', 'setup-code', 'purge'];

async function main(): Promise<void> {
  const command = process.argv[2];
  if (command !== undefined && !COMMANDS.includes(command)) {
    process.stderr.write(
      `Unknown command: ${command}. Run without one to serve, \`migrate\` to apply pending migrations, \`setup-code\` for a new admin setup code, or \`purge\` to delete what retention keeps no longer.\n`,
    );
    process.exit(2);
  }
  let config: AppConfig;
  try {
    config = AppConfig.fromEnv(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);

  let embedded: EmbeddedPostgres | undefined;
  let poolSize = SERVER_POOL_SIZE;
  if (!config.databaseUrl) {
    // Loaded only when used: a deployment on a Postgres server never loads PGlite.
    const { startEmbeddedPostgres, EMBEDDED_POOL_SIZE } = await import('./database/embedded-postgres.js');
    embedded = await startEmbeddedPostgres(config.dataDir);
    poolSize = EMBEDDED_POOL_SIZE;
  }
  const databaseUrl = config.databaseUrl ?? embedded!.url;
  if (command) {
    try {
      const output = command === 'purge' ? await purgeOnce(databaseUrl, Boolean(embedded), logger) : await runCommand(command, databaseUrl, Boolean(embedded), config);
      process.stdout.write(`${output}\n`);
      return;
    } finally {
      await embedded?.stop().catch(() => undefined);
    }
  }

  let app: Awaited<ReturnType<typeof createApp>>;
  try {
    app = await createApp({ env: process.env, databaseUrl, embedded: Boolean(embedded), poolSize }, logger);
    await app.listen(config.port, config.host);
  } catch (err) {
    // Close PGlite's files and give the data directory back before saying why.
    await embedded?.stop().catch(() => undefined);
    throw err;
  }
  // Before the banner: whoever starts us may stop us as soon as it reads it.
  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    let code = 0;
    try {
      app.get(ShutdownState).stopping = true;
      if (config.shutdownDelaySeconds > 0) {
        logger.info({ signal }, `shutting down: not ready any more, serving ${config.shutdownDelaySeconds} s more while load balancers notice`);
        await new Promise((resolve) => setTimeout(resolve, config.shutdownDelaySeconds * 1000));
      }
      logger.info({ signal }, 'shutting down: finishing in-flight requests');
      const { cut } = await HttpDrain.of(app.getHttpServer()).drain(config.shutdownGraceSeconds * 1000);
      if (cut) logger.warn({ cut }, `closed ${cut} request(s) still open after ${config.shutdownGraceSeconds} s`);
      // Then Nest's shutdown hooks: background writes, the revocation listener, the pool.
      await app.close();
    } catch (err) {
      code = 1;
      logger.error({ err: (err as Error).message }, 'shutdown failed');
    } finally {
      await embedded?.stop().catch(() => undefined);
    }
    logger.info('stopped');
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    process.exit(code);
  };
  process.once('SIGTERM', (s) => void shutdown(s));
  process.once('SIGINT', (s) => void shutdown(s));

  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const publicUrl = config.port === 0 ? `http://localhost:${port}` : config.publicUrl;
  const setupCode = app.get(AdminSetupCodes).issued;

  process.stdout.write(
    [
      '',
      `  Prospect API is running on ${publicUrl}`,
      `  Create an account:  ${publicUrl}/signup`,
      `  Sign in the CLI:    npx prospect auth:login --api-url ${publicUrl}`,
      `  API docs:           ${publicUrl}/api/docs`,
      ...(setupCode ? [`  First admin:        ${publicUrl}/signup?setup_code=${setupCode}  (no administrator yet; the code works once)`] : []),
      `  Mail:               ${config.smtpUrl ? `through ${new URL(config.smtpUrl).host} from ${config.mailFrom}` : 'written to the log, one line per mail (set SMTP_URL to send it)'}`,
      `  Database:           ${embedded ? `embedded Postgres in ${embedded.dataDir} (set DATABASE_URL for a server)` : config.databaseDirectUrl ? 'DATABASE_URL through a pooler (LISTEN and migrations on DATABASE_DIRECT_URL)' : 'DATABASE_URL'}`,
      '',
      '',
    ].join('\n'),
  );
}

/** A one-off command on the database, without serving; returns what it prints. */
async function runCommand(command: string, poolUrl: string, embedded: boolean, config: AppConfig): Promise<string> {
  // A one-off command holds a session (the migrations' advisory lock): never through a pooler.
  const databaseUrl = config.databaseDirectUrl ?? poolUrl;
  if (command === 'migrate') {
    const applied = await migrateDatabase(databaseUrl, { embedded, timeoutMs: config.databaseTimeoutMs });
    return applied.length ? `Applied ${applied.length} migration(s): ${applied.join(', ')}` : 'The database is up to date.';
  }
  // setup-code: a new code in place of one whose log line was lost.
  const code = await withDataSource(databaseUrl, config.databaseTimeoutMs, async (dataSource) => {
    const database = new DatabaseInfo(databaseUrl, embedded);
    await prepareSchema(dataSource, database, { migrateOnStart: config.migrateOnStart, timeoutMs: config.databaseTimeoutMs });
    return new AdminSetupCodes(new ServerSecretsRepository(new Sql(dataSource, database))).replace();
  });
  return code
    ? `New admin setup code (the earlier one no longer works): ${config.publicUrl}/signup?setup_code=${code}`
    : 'An administrator exists already: no setup code is needed.';
}

/**
 * One retention purge (RetentionService, the hourly job) with the application's own wiring, and no
 * HTTP server; says what it deleted, or that a replica holds the purge's lock.
 */
async function purgeOnce(databaseUrl: string, embedded: boolean, logger: Logger): Promise<string> {
  const app = await NestFactory.createApplicationContext(AppModule.forRoot({ env: process.env, databaseUrl, embedded, poolSize: 2 }), {
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  try {
    const started = Date.now();
    const counts = await app.get(RetentionService).purge();
    if (!counts) return 'Another replica is purging now: nothing done.';
    const { tokens, refreshTokens, deviceLogins, webSessions, auditEvents } = counts;
    return `Purged in ${Date.now() - started} ms: ${tokens} access tokens, ${refreshTokens} refresh tokens, ${deviceLogins} device logins, ${webSessions} web sessions, ${auditEvents} audit events.`;
  } finally {
    await app.close();
  }
}

main().catch((err: unknown) => {
  // A failure to start (or of a command) is one readable line; the stack only with DEBUG set.
  const message = err instanceof Error ? err.message : String(err);
  const command = process.argv[2];
  process.stderr.write(`prospect-api ${command ? `${command} failed` : 'failed to start'}: ${message}\n`);
  if (process.env.DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
