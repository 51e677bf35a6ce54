import { createLogger } from './logging/logger.js';
import { AppConfig, ConfigError } from './config/app-config.js';
import { createApp } from './bootstrap.js';
import { migrateDatabase } from './database/migrations-runner.js';
import { HttpDrain } from './http-drain.js';
import { AdminSetupCodes } from './users/admin-setup-codes.js';
import type { EmbeddedPostgres } from './database/embedded-postgres.js';

/** Connections to a Postgres server: enough to keep 2 cores busy, few enough for many replicas. */
const SERVER_POOL_SIZE = 10;

/** `main.js` serves; `main.js migrate` applies pending migrations and exits. */
const COMMANDS = ['migrate'];

async function main(): Promise<void> {
  const command = process.argv[2];
  if (command !== undefined && !COMMANDS.includes(command)) {
    process.stderr.write(`Unknown command: ${command}. Run without one to serve, or \`migrate\` to apply pending migrations.\n`);
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
  if (command === 'migrate') {
    try {
      const applied = await migrateDatabase(databaseUrl, { embedded: Boolean(embedded), timeoutMs: config.databaseTimeoutMs });
      process.stdout.write(applied.length ? `Applied ${applied.length} migration(s): ${applied.join(', ')}\n` : 'The database is up to date.\n');
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
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    let code = 0;
    try {
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
      `  Database:           ${embedded ? `embedded Postgres in ${embedded.dataDir} (set DATABASE_URL for a server)` : 'DATABASE_URL'}`,
      '',
      '',
    ].join('\n'),
  );
}

main().catch((err: unknown) => {
  // A failure to start is one readable line; the stack only with DEBUG set.
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`prospect-api failed to start: ${message}\n`);
  if (process.env.DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
