import { execFile } from 'node:child_process';
import { cleanUpOnExit } from './process-cleanup.js';
import { chmod, chown, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The machine's PostgreSQL binaries (Debian's layout: /usr/lib/postgresql/<major>/bin). */
async function binDir(): Promise<string> {
  const majors = (await readdir('/usr/lib/postgresql')).sort((a, b) => Number(b) - Number(a));
  return `/usr/lib/postgresql/${majors[0]}/bin`;
}

/** A port nobody listens on right now, for a server a test starts. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A Postgres cluster of a test's own (initdb + pg_ctl of the machine's PostgreSQL),
 * so a test can stop it or freeze it without touching the shared server. Runs as the
 * `postgres` user when the tests run as root (initdb refuses root).
 */
export class ThrowawayPostgres {
  private forget?: () => void;

  private constructor(
    private readonly bin: string,
    private readonly dir: string,
    readonly port: number,
    private readonly asUser: string[],
  ) {}

  static async create(): Promise<ThrowawayPostgres> {
    const pg = await ThrowawayPostgres.unstarted();
    await pg.exec('initdb', ['-D', join(pg.dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    await pg.start();
    return pg;
  }

  /**
   * A streaming standby of `primary`, started (answering reads): `pg_basebackup -R` into a
   * directory of its own, which writes `standby.signal` and the `primary_conninfo` to follow it.
   * initdb's pg_hba.conf (`-A trust`) already lets 127.0.0.1 replicate.
   */
  static async standbyOf(primary: ThrowawayPostgres): Promise<ThrowawayPostgres> {
    const pg = await ThrowawayPostgres.unstarted();
    try {
      await pg.exec('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', join(pg.dir, 'data'), '-R', '-X', 'stream', '-c', 'fast', '--no-sync']);
      await pg.start();
    } catch (err) {
      // The test never gets hold of it to destroy it: nothing is left behind.
      await pg.destroy();
      throw err;
    }
    return pg;
  }

  /** A directory of its own (owned by `postgres` when the tests run as root) and a free port; nothing in it yet. */
  private static async unstarted(): Promise<ThrowawayPostgres> {
    const bin = await binDir();
    const dir = await mkdtemp(join(tmpdir(), 'prospect-pg-'));
    const root = process.getuid?.() === 0;
    if (root) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const { stdout: gid } = await run('id', ['-g', 'postgres']);
      await chown(dir, Number(stdout.trim()), Number(gid.trim()));
    }
    await chmod(dir, 0o700);
    return new ThrowawayPostgres(bin, dir, await freePort(), root ? ['runuser', '-u', 'postgres', '--'] : []);
  }

  /** A standby becomes a primary (`pg_ctl promote`, waiting until it accepts writes). */
  async promote(): Promise<void> {
    await this.exec('pg_ctl', ['-D', join(this.dir, 'data'), '-w', '-t', '30', 'promote']);
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
    await this.exec('pg_ctl', ['-D', join(this.dir, 'data'), '-o', options, '-l', join(this.dir, 'log'), '-w', '-t', '30', 'start']);
    // An interrupted test run stops the cluster too (it runs in a session of its own, out of reach of Ctrl-C).
    this.forget ??= cleanUpOnExit({ run: [...this.asUser, join(this.bin, 'pg_ctl'), '-D', join(this.dir, 'data'), '-m', 'immediate', 'stop'] });
  }

  /** A clean, fast stop: connections are closed, as when the server is restarted. */
  async stop(): Promise<void> {
    await this.exec('pg_ctl', ['-D', join(this.dir, 'data'), '-m', 'fast', '-w', 'stop']);
  }

  /** Freezes (SIGSTOP) or thaws (SIGCONT) every process of the cluster: a database that stops answering without closing anything. */
  async signalAll(signal: 'SIGSTOP' | 'SIGCONT'): Promise<void> {
    for (const pid of await this.pids()) process.kill(pid, signal);
  }

  async destroy(): Promise<void> {
    await this.signalAll('SIGCONT').catch(() => undefined);
    await this.stop().catch(() => undefined);
    this.forget?.();
    await rm(this.dir, { recursive: true, force: true });
  }

  /** The server's main process. */
  async postmasterPid(): Promise<number> {
    return Number((await readFile(join(this.dir, 'data', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  }

  private async pids(): Promise<number[]> {
    const postmaster = await this.postmasterPid();
    const { stdout } = await run('pgrep', ['-P', String(postmaster)]).catch(() => ({ stdout: '' }));
    return [postmaster, ...stdout.split('\n').filter(Boolean).map(Number)];
  }

  private async exec(tool: string, args: string[]): Promise<void> {
    const [cmd, ...rest] = [...this.asUser, join(this.bin, tool), ...args];
    await run(cmd!, rest, { timeout: 60_000 });
  }
}
