import { type ChildProcess, spawn } from 'node:child_process';
import { cleanUpOnExit } from './process-cleanup.js';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './throwaway-postgres.js';

/** The PgBouncer sample the repository ships (docs/operations.md: PgBouncer). */
export const PGBOUNCER_INI = fileURLToPath(new URL('../../../../deploy/pgbouncer/pgbouncer.ini', import.meta.url));

/**
 * The settings of one section of an ini file, in order; PgBouncer's comments (`;`, `#`) and blank
 * lines dropped.
 */
export function iniSection(ini: string, name: string): Array<[string, string]> {
  const settings: Array<[string, string]> = [];
  let inSection = false;
  for (const raw of ini.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith(';') || line.startsWith('#')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      inSection = header[1] === name;
      continue;
    }
    const eq = line.indexOf('=');
    if (inSection && eq > 0) settings.push([line.slice(0, eq).trim(), line.slice(eq + 1).trim()]);
  }
  return settings;
}

/** The password of the tests' PgBouncer login (auth_type from the sample; the server behind it trusts). */
const PASSWORD = 'pgbouncer-test-password';

/**
 * Debian's PgBouncer (installed by .ci/run) with the [pgbouncer] settings of the shipped sample
 * (deploy/pgbouncer/pgbouncer.ini: pool mode, timeouts, retries, auth type), so the sample is
 * what the tests run. Only what belongs to this machine is the test's own: the address (a port of
 * its own, no Unix socket), the auth_file, and the [databases] in front of one database of a
 * Postgres server. Two entries lead to it: `timed`, whose server connections get
 * `statement_timeout` from connect_query (as the sample and the README set it up), and
 * `untimed`, without. `poolSize` overrides default_pool_size: a small server pool, so the
 * clients' statements interleave on shared server sessions as they do in production. Runs as
 * `postgres` when the tests run as root (PgBouncer refuses root).
 */
export class PgBouncer {
  private constructor(
    private readonly dir: string,
    private readonly child: ChildProcess,
    readonly port: number,
    private readonly user: string,
    private readonly output: () => string,
  ) {}

  static async start(serverUrl: string, statementTimeoutMs: number, options: { poolSize?: number } = {}): Promise<PgBouncer> {
    const server = new URL(serverUrl);
    const user = decodeURIComponent(server.username) || 'postgres';
    const target = `host=${server.hostname} port=${server.port || 5432} dbname=${server.pathname.slice(1)}`;
    const dir = await mkdtemp(join(tmpdir(), 'prospect-pgbouncer-'));
    await chmod(dir, 0o755);
    const port = await freePort();
    const ours: Record<string, string> = {
      listen_addr: '127.0.0.1',
      listen_port: String(port),
      unix_socket_dir: '',
      auth_file: join(dir, 'users.txt'),
      ...(options.poolSize === undefined ? {} : { default_pool_size: String(options.poolSize) }),
    };
    const sample = iniSection(await readFile(PGBOUNCER_INI, 'utf8'), 'pgbouncer').filter(([key]) => !(key in ours));
    const ini = [
      '[databases]',
      `timed = ${target} connect_query='SET statement_timeout = ${statementTimeoutMs}'`,
      `untimed = ${target}`,
      '[pgbouncer]',
      ...sample.map(([key, value]) => `${key} = ${value}`),
      ...Object.entries(ours).map(([key, value]) => `${key} = ${value}`),
    ].join('\n');
    await writeFile(join(dir, 'pgbouncer.ini'), `${ini}\n`, { mode: 0o644 });
    await writeFile(join(dir, 'users.txt'), `"${user}" "${PASSWORD}"\n`, { mode: 0o644 });
    const root = process.getuid?.() === 0;
    const child = spawn('pgbouncer', [...(root ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.once('exit', cleanUpOnExit({ kill: child.pid! }));
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const bouncer = new PgBouncer(dir, child, port, user, () => output);
    await bouncer.waitForPort();
    return bouncer;
  }

  /** The URL of one of its entries, as DATABASE_URL. */
  url(entry: 'timed' | 'untimed'): string {
    return `postgres://${encodeURIComponent(this.user)}:${PASSWORD}@127.0.0.1:${this.port}/${entry}`;
  }

  /** Its log (connections, logins that failed, errors sent to clients). */
  log(): string {
    return this.output();
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
    await rm(this.dir, { recursive: true, force: true });
  }

  private async waitForPort(): Promise<void> {
    for (let attempt = 0; attempt < 100; attempt++) {
      if (this.child.exitCode !== null) throw new Error(`pgbouncer exited: ${this.output()}`);
      const open = await new Promise<boolean>((resolve) => {
        const socket = net.connect(this.port, '127.0.0.1');
        const done = (listening: boolean) => {
          socket.destroy();
          resolve(listening);
        };
        socket.once('connect', () => done(true));
        socket.once('error', () => done(false));
        socket.setTimeout(500, () => done(false));
      });
      if (open) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`pgbouncer did not listen on ${this.port}: ${this.output()}`);
  }
}
