// First: with an OTLP endpoint set, it instruments http, Express and pg before anything loads them.
import { tracing } from './telemetry/register.js';
import type { Server } from 'node:net';
import { NestFactory } from '@nestjs/core';
import type { Logger } from 'pino';
import { AppModule } from './app.module.js';
import { createLogger, PinoNestLogger } from './logging/logger.js';
import { RetentionService } from './retention/retention.service.js';
import { AppConfig, ConfigError } from './config/app-config.js';
import { createApp } from './bootstrap.js';
import { migrateDatabase, withSchemaReady } from './database/migrations-runner.js';
import { ServerSecrets } from './server-secrets/server-secrets.js';
import { SigningKeys } from './server-secrets/signing-keys.js';
import { HttpDrain } from './http-drain.js';
import { MailWorker } from './mail/mail-worker.js';
import { ShutdownState } from './health/shutdown-state.js';
import { AdminSetupCodes } from './users/admin-setup-codes.js';
import type { EmbeddedPostgres } from './database/embedded-postgres.js';
import { checkPortFree, portInUse } from './port-check.js';
import { SERVER_POOL_SIZE } from './database/pool-size.js';

/**
 * `main.js` serves; `main.js migrate` applies pending migrations, `main.js setup-code` prints a new
 * admin setup code, `main.js purge` runs the hourly retention purge once (after a large import, or
 * from a scheduler of its own), `main.js rotate-keys` replaces the ID tokens' signing key now (the
 * old one stays published until what it signed has expired); each then exits.
 */
const COMMANDS = ['migrate', 'setup-code', 'purge', 'rotate-keys'];

async function main(): Promise<void> {
  const command = process.argv[2];
  if (command !== undefined && !COMMANDS.includes(command)) {
    process.stderr.write(
      `Unknown command: ${command}. Run without one to serve, \`migrate\` to apply pending migrations, \`setup-code\` for a new admin setup code, \`purge\` to delete what retention keeps no longer, or \`rotate-keys\` to replace the ID tokens' signing key now.\n`,
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
  const logger = createLogger(config.logLevel, undefined, tracing?.logFields);
  if (command === 'migrate') refuseAnUnintendedMigration(config, process.argv.slice(3));
  // A port already taken is said at once, before the database opens and a setup link is printed.
  if (!command) await checkPortFree(config.host, config.port);

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
      const output =
        command === 'purge'
          ? await purgeOnce(databaseUrl, Boolean(embedded), logger)
          : command === 'rotate-keys'
            ? await rotateKeys(databaseUrl, Boolean(embedded), logger)
            : await runCommand(command, databaseUrl, Boolean(embedded), config);
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
    // Taken since checkPortFree asked: the same line.
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new Error(portInUse(config.host, config.port));
    throw err;
  }
  // Before the banner: whoever starts us may stop us as soon as it reads it.
  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    // What the delay and the grace allow in all: the spans' last export fits in what is left of it.
    const deadline = Date.now() + (config.shutdownDelaySeconds + config.shutdownGraceSeconds) * 1000;
    let code = 0;
    try {
      app.get(ShutdownState).stopping = true;
      // No new mail claimed from now on; a send under way is abandoned in time to exit within the grace (mail/mail-worker.ts).
      app.get(MailWorker).stop(deadline);
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
    if (tracing) {
      const spans = await tracing.shutdown(deadline - Date.now());
      if (spans !== 'flushed') logger.warn(`traces: the last spans were not exported (${spans})`);
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
      `  Listening on:       ${listeningOn(address, config.host, port)}`,
      `  Create an account:  ${publicUrl}/signup`,
      `  Organizations:      ${publicUrl}/orgs  (your teams: members, domains, SSO)`,
      `  Sign in the CLI:    prospect auth:login --api-url ${publicUrl}   (no prospect yet? npm run cli:install)`,
      `  API docs:           ${publicUrl}/api/docs`,
      ...(setupCode ? [`  First admin:        ${publicUrl}/signup?setup_code=${setupCode}  (no administrator yet; the code works once)`] : []),
      `  Mail:               ${config.smtpUrl ? `through ${new URL(config.smtpUrl).host} from ${config.mailFrom}` : 'written to the log, one line per mail (set SMTP_URL to send it)'}`,
      `  Database:           ${embedded ? `embedded Postgres in ${embedded.dataDir} (set DATABASE_URL for a server)` : config.databaseDirectUrl ? 'DATABASE_URL through a pooler (LISTEN and migrations on DATABASE_DIRECT_URL)' : 'DATABASE_URL'}`,
      '',
      '',
    ].join('\n'),
  );
}

/**
 * Where this process accepts connections (HOST and PORT), which behind a proxy is not the public
 * URL: with three replicas on one machine, each banner names its own port.
 */
function listeningOn(address: ReturnType<Server['address']>, host: string, port: number): string {
  const bound = typeof address === 'object' && address ? address.address : host;
  const hostPort = `${bound.includes(':') ? `[${bound}]` : bound}:${port}`;
  return bound === '0.0.0.0' || bound === '::' ? `${hostPort} (every address of this machine)` : hostPort;
}

/** A one-off command on the database, without serving; returns what it prints. */
async function runCommand(command: string, poolUrl: string, embedded: boolean, config: AppConfig): Promise<string> {
  // A one-off command holds a session (the migrations' advisory lock): never through a pooler.
  const databaseUrl = config.databaseDirectUrl ?? poolUrl;
  if (command === 'migrate') {
    const applied = await migrateDatabase(databaseUrl, { embedded, timeoutMs: config.databaseTimeoutMs });
    // Named, so an operator sees which database a shell's variables pointed at (never its password).
    const database = embedded ? `the embedded database in ${config.dataDir}` : nameOfDatabase(databaseUrl);
    return applied.length ? `Applied ${applied.length} migration(s) to ${database}: ${applied.join(', ')}` : `${database[0]!.toUpperCase()}${database.slice(1)} is up to date.`;
  }
  // setup-code: a new code in place of one whose log line was lost.
  const settings = { embedded, migrateOnStart: config.migrateOnStart, timeoutMs: config.databaseTimeoutMs };
  const code = await withSchemaReady(databaseUrl, settings, (sql) => new AdminSetupCodes(ServerSecrets.over(sql)).replace());
  return code
    ? `New admin setup code (the earlier one no longer works): ${config.publicUrl}/signup?setup_code=${code}`
    : 'An administrator exists already: no setup code is needed.';
}

/** `the database prospect@db.internal:5432/prospect`: who, where and which, never the password. */
function nameOfDatabase(url: string): string {
  const parsed = new URL(url);
  const user = decodeURIComponent(parsed.username);
  return `the database ${user ? `${user}@` : ''}${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname === '/' ? '' : decodeURIComponent(parsed.pathname)}`;
}

/**
 * `migrate` in a shell where DATABASE_URL did not arrive (another terminal, a `sudo` that dropped
 * it) would migrate the embedded database and report "up to date": refused, in one line, unless
 * `--embedded` asks for exactly that. Exits 2, a usage error, before anything is opened.
 */
function refuseAnUnintendedMigration(config: AppConfig, args: string[]): void {
  const refuse = (why: string) => {
    process.stderr.write(`Refusing to migrate: ${why}\n`);
    process.exit(2);
  };
  const unknown = args.filter((arg) => arg !== '--embedded');
  if (unknown.length) refuse(`unknown argument ${unknown[0]}; \`migrate\` takes only --embedded.`);
  const embeddedAsked = args.includes('--embedded');
  if (!config.databaseUrl && !embeddedAsked) {
    refuse(
      `DATABASE_URL is not set, so this would migrate the embedded database in ${config.dataDir}. Set DATABASE_URL to your server's, or run \`migrate --embedded\` (npm run migrate -- --embedded) to migrate the embedded one.`,
    );
  }
  if (config.databaseUrl && embeddedAsked) {
    refuse(`--embedded asks for the embedded database, but DATABASE_URL is set (${nameOfDatabase(config.databaseUrl)}). Unset DATABASE_URL, or drop --embedded.`);
  }
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

/**
 * A new ID-token signing key, with the application's own wiring and no HTTP server: every replica
 * signs with it from its next ID token (they read the keys from the database); the keys it replaced
 * stay in the JWKS until the ID tokens they signed have expired (server-secrets/signing-keys.ts).
 */
async function rotateKeys(databaseUrl: string, embedded: boolean, logger: Logger): Promise<string> {
  const app = await NestFactory.createApplicationContext(AppModule.forRoot({ env: process.env, databaseUrl, embedded, poolSize: 2 }), {
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  try {
    const { kid, stillPublished, deleted } = await app.get(SigningKeys).rotate();
    return [
      `New ID-token signing key ${kid}: it signs from now on, on every replica.`,
      stillPublished.length ? `Still published until the ID tokens they signed expire: ${stillPublished.join(', ')}.` : 'No earlier key is still published.',
      ...(deleted.length ? [`No longer published (deleted): ${deleted.join(', ')}.`] : []),
    ].join('\n');
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
