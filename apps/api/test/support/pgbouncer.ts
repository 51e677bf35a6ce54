import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './throwaway-postgres.js';

/**
 * Debian's PgBouncer (installed by .ci/run) in transaction mode, on a port of its own, in front
 * of one database of a Postgres server. Two entries lead to it: `timed`, whose server
 * connections get `statement_timeout` from connect_query (as the README tells a team to set
 * up), and `untimed`, without. A small server pool, so the clients' statements interleave
 * on shared server sessions as they do in production. Runs as `postgres` when the tests run
 * as root (PgBouncer refuses root).
 */
export class PgBouncer {
  private constructor(
    private readonly dir: string,
    private readonly child: ChildProcess,
    readonly port: number,
    private readonly user: string,
    private readonly output: () => string,
  ) {}

  static async start(serverUrl: string, statementTimeoutMs: number): Promise<PgBouncer> {
    const server = new URL(serverUrl);
    const user = decodeURIComponent(server.username) || 'postgres';
    const target = `host=${server.hostname} port=${server.port || 5432} dbname=${server.pathname.slice(1)}`;
    const dir = await mkdtemp(join(tmpdir(), 'prospect-pgbouncer-'));
    await chmod(dir, 0o755);
    const port = await freePort();
    const ini = [
      '[databases]',
      `timed = ${target} connect_query='SET statement_timeout = ${statementTimeoutMs}'`,
      `untimed = ${target}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'default_pool_size = 3',
      'max_client_conn = 200',
    ].join('\n');
    await writeFile(join(dir, 'pgbouncer.ini'), `${ini}\n`, { mode: 0o644 });
    await writeFile(join(dir, 'users.txt'), `"${user}" ""\n`, { mode: 0o644 });
    const root = process.getuid?.() === 0;
    const child = spawn('pgbouncer', [...(root ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const bouncer = new PgBouncer(dir, child, port, user, () => output);
    await bouncer.waitForPort();
    return bouncer;
  }

  /** The URL of one of its entries, as DATABASE_URL. */
  url(entry: 'timed' | 'untimed'): string {
    return `postgres://${this.user}@127.0.0.1:${this.port}/${entry}`;
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

