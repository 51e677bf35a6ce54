// One benchmark session: a throwaway database, a temp directory for the servers' logs, the
// child processes, and a cleanup that stops them all and drops the database, also on failure
// and on Ctrl-C (SIGINT/SIGTERM). Shared by bench/run.mjs and bench/soak.mjs.
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, stopChild, waitReady } from './processes.mjs';
import { API_MAIN, ROOT } from './util.mjs';

/**
 * @param {{ log: (msg: string) => void, databaseUrl: string, keepLogs?: boolean, tmpPrefix?: string }} options
 *   `databaseUrl`: the server (and a database on it to connect to) where the bench database is created.
 */
export function createSession({ log, databaseUrl, keepLogs = false, tmpPrefix = 'prospect-bench-' }) {
  const children = new Set();
  const hooks = [];
  let benchDb;
  let tmpDir;
  let cleaningUp;

  const adminClient = () => new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000, query_timeout: 30_000 });

  const session = {
    log,
    /** Set once SIGINT or SIGTERM arrived; the handler then cleans up and exits 130. */
    interrupted: false,
    get tmpDir() {
      return tmpDir;
    },

    /** Run first on cleanup (stop timers, load generators); each is awaited, a failure only logged. */
    onCleanup(fn) {
      hooks.push(fn);
    },

    /** Creates `<prefix>_<UTC timestamp>_<pid>`; returns its name, a URL to it and the server's version. */
    async createDatabase(prefix = 'prospect_bench') {
      const admin = adminClient();
      await admin.connect();
      let pgVersion;
      let name;
      try {
        pgVersion = (await admin.query('SELECT version()')).rows[0].version.split(' on ')[0];
        name = `${prefix}_${new Date().toISOString().replace(/\D/g, '').slice(0, 14)}_${process.pid}`;
        await admin.query(`CREATE DATABASE ${name}`);
        benchDb = name;
      } finally {
        await admin.end().catch(() => undefined);
      }
      const dbUrl = new URL(databaseUrl);
      dbUrl.pathname = `/${name}`;
      log(`database ${name} created`);
      return { name, url: dbUrl.toString(), pgVersion };
    },

    makeTmpDir() {
      tmpDir = mkdtempSync(join(os.tmpdir(), tmpPrefix));
      return tmpDir;
    },

    /** `node <args>` in the repository root, stdout and stderr to `<logBase>.out.log` / `.err.log`. */
    startChild(name, args, childEnv, logBase) {
      const out = openSync(`${logBase}.out.log`, 'w');
      const err = openSync(`${logBase}.err.log`, 'w');
      const child = spawn(process.execPath, args, { cwd: ROOT, env: childEnv, stdio: ['ignore', out, err] });
      closeSync(out);
      closeSync(err);
      child.label = name;
      child.logBase = logBase;
      child.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
      children.add(child);
      child.exited.then(() => children.delete(child));
      return child;
    },

    stopChild(child) {
      return stopChild(child, log);
    },

    /** Runs a script's `main`, says why it failed (exit code 1), then cleans up and exits. */
    run(main) {
      return main()
        .catch((err) => {
          if (session.interrupted) return; // Ctrl-C: the signal handler cleans up and exits
          log(`failed: ${err.stack ?? err}`);
          process.exitCode = 1;
        })
        .finally(() => session.cleanup())
        .finally(() => process.exit());
    },

    cleanup() {
      cleaningUp ??= (async () => {
        for (const fn of hooks) {
          try {
            await fn();
          } catch (err) {
            log(`cleanup: ${err.message}`);
          }
        }
        await Promise.all([...children].map((c) => stopChild(c, log)));
        if (benchDb) {
          const admin = adminClient();
          try {
            await admin.connect();
            await admin.query(`DROP DATABASE IF EXISTS ${benchDb} WITH (FORCE)`);
            log(`dropped database ${benchDb}`);
          } catch (err) {
            log(`could not drop database ${benchDb}: ${err.message} (drop it by hand)`);
          } finally {
            await admin.end().catch(() => undefined);
          }
          benchDb = undefined;
        }
        if (tmpDir && !keepLogs) rmSync(tmpDir, { recursive: true, force: true });
      })();
      return cleaningUp;
    },
  };

  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      session.interrupted = true;
      log(`${signal}: stopping servers and dropping the bench database`);
      const force = setTimeout(() => process.exit(130), 30_000);
      force.unref();
      session.cleanup().finally(() => process.exit(130));
    });
  }
  return session;
}

/**
 * The API as production runs it: `node apps/api/dist/main.js`, NODE_ENV=production, LOG_LEVEL=info
 * (its request log to `<logBase>.out.log`), DATABASE_URL, on a free loopback port; resolves once
 * `/api/health` answers. Its migrations create the schema.
 */
export async function startApi(session, { databaseUrl, pollIntervalS, nodeArgs = [], logBase, extraEnv = {} }) {
  const port = await freePort();
  const apiEnv = {
    ...process.env,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    DEVICE_POLL_INTERVAL_SECONDS: String(pollIntervalS),
    // All load comes from one address here; the per-address limit on starts must not turn the
    // load into 429s. Raised this far, its points are claimed 64 ahead (LeasedLimiter), so starts
    // pay one counter update per 65 rather than one each.
    DEVICE_START_PER_IP_PER_MINUTE: '1000000000',
    PUBLIC_URL: '',
    ...extraEnv,
  };
  const spawnedAt = Date.now();
  const child = session.startChild('API', [...nodeArgs, API_MAIN], apiEnv, logBase);
  await waitReady(child, `http://127.0.0.1:${port}/api/health`);
  session.log(`API ready on :${port} (pid ${child.pid}) after ${Date.now() - spawnedAt} ms`);
  return { child, port, url: `http://127.0.0.1:${port}`, spawnedAt };
}
