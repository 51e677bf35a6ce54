import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROUTES } from '@prospect/contract';
import { MIGRATIONS } from '../../src/database/migrations/index.js';
import { eventually } from '../support/eventually.js';
import { cleanUpOnExit, isAlive, scaledTimeout } from '../support/process-cleanup.js';
import { freePort, ThrowawayPostgres } from '../support/throwaway-postgres.js';

const REPOSITORY = fileURLToPath(new URL('../../../../', import.meta.url));
const OPERATIONS_MD = join(REPOSITORY, 'docs/operations.md');

/**
 * The shell blocks of docs/operations.md that the recipe marks: `<!-- recipe -->` before each block
 * that sets up and starts, `<!-- recipe: stop -->` before the one that stops everything. Only the
 * blank lines may stand between a marker and its block.
 */
function recipeBlocks(markdown: string): { start: string[]; stop: string[] } {
  const start: string[] = [];
  const stop: string[] = [];
  const pattern = /^<!-- recipe(: stop)? -->\n(?:\n)*```sh\n([\s\S]*?)^```$/gm;
  for (const [, isStop, body] of markdown.matchAll(pattern)) (isStop ? stop : start).push(body!);
  return { start, stop };
}

/** The pids the recipe wrote to $PROSPECT_RUN, by name (haproxy, api1…, pgbouncer). */
function pidFiles(run: string): Record<string, number> {
  const pids: Record<string, number> = {};
  for (const name of ['haproxy', 'api1', 'api2', 'api3', 'pgbouncer']) {
    try {
      pids[name] = Number(readFileSync(join(run, `${name}.pid`), 'utf8').trim());
    } catch {
      // Not started (yet).
    }
  }
  return pids;
}

/** The processes whose command line holds `needle`, with their owner's uid (from /proc). */
async function processesWith(needle: string): Promise<Array<{ pid: number; uid: number; cmdline: string }>> {
  const found = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0').join(' ');
      if (!cmdline.includes(needle)) continue;
      const uid = Number(/^Uid:\s+(\d+)/m.exec(await readFile(`/proc/${entry}/status`, 'utf8'))![1]);
      found.push({ pid: Number(entry), uid, cmdline });
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/**
 * docs/operations.md's recipe for three replicas behind haproxy and PgBouncer, run as written: its
 * marked blocks go, one after another, into one bash (as an operator pastes them into one shell),
 * against a throwaway Postgres cluster and on free ports, both given through the variables of the
 * recipe's first block. Then a device login through the proxy, and the recipe's own stop block.
 */
describe('docs/operations.md: three replicas behind haproxy and PgBouncer, from a clean shell', () => {
  let pg: ThrowawayPostgres;
  let dir: string;
  let run: string;
  let shell: ChildProcess | undefined;
  let shellOutput = '';
  let shellExit: Promise<number | null>;
  let blocks: { start: string[]; stop: string[] };
  const ports = { pgbouncer: 0, api: [0, 0, 0], proxy: 0, stats: 0 };
  let forget: (() => void) | undefined;

  beforeAll(async () => {
    blocks = recipeBlocks(await readFile(OPERATIONS_MD, 'utf8'));
    pg = await ThrowawayPostgres.create();
    dir = await mkdtemp(join(tmpdir(), 'prospect-recipe-'));
    // PgBouncer runs as another user (the recipe's runuser when we are root): it must reach its files.
    await chmod(dir, 0o755);
    run = join(dir, 'run');
    ports.pgbouncer = await freePort();
    ports.api = [await freePort(), await freePort(), await freePort()];
    ports.proxy = await freePort();
    ports.stats = await freePort();
    // Whatever the recipe started ends with this test process, even on Ctrl-C or SIGKILL: the pids
    // it wrote, and PgBouncer itself (its pid file holds runuser's when we are root).
    forget = cleanUpOnExit({
      run: ['sh', '-c', 'for f in "$0"/*.pid; do kill -9 "$(cat "$f")"; done; pkill -KILL -f "$0/pgbouncer/pgbouncer.ini"', run],
    });
  }, scaledTimeout(120_000));

  afterAll(async () => {
    if (shell && shell.exitCode === null) shell.kill('SIGKILL');
    const left = Object.values(run ? pidFiles(run) : {}).filter((pid) => isAlive(pid));
    for (const pid of left) process.kill(pid, 'SIGKILL');
    if (run) spawnSync('pkill', ['-KILL', '-f', join(run, 'pgbouncer', 'pgbouncer.ini')], { stdio: 'ignore' });
    forget?.();
    await pg?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('marks its blocks: settings, role and database, PgBouncer, migrate and replicas, haproxy, the check; and a stop', () => {
    expect(blocks.start).toHaveLength(6);
    expect(blocks.stop).toHaveLength(1);
    expect(blocks.start[1]).toContain('CREATE ROLE prospect');
    expect(blocks.start[2]).toContain('deploy/pgbouncer/pgbouncer.ini');
    expect(blocks.start[3]).toContain('node apps/api/dist/main.js migrate');
    expect(blocks.start[4]).toContain('haproxy -db -f deploy/haproxy/haproxy.cfg');
  });

  it('runs, signs in through the proxy, and stops everything', async () => {
    const environment = {
      // A clean shell: no variable of the test process leaks in but these.
      PATH: process.env.PATH!,
      HOME: dir,
      LANG: 'C.UTF-8',
      PROSPECT_RUN: run,
      PG_SUPERUSER_URL: pg.url,
      PG_HOST: '127.0.0.1',
      PG_PORT: String(pg.port),
      PGBOUNCER_PORT: String(ports.pgbouncer),
      PROSPECT_API1: `127.0.0.1:${ports.api[0]}`,
      PROSPECT_API2: `127.0.0.1:${ports.api[1]}`,
      PROSPECT_API3: `127.0.0.1:${ports.api[2]}`,
      PROSPECT_PROXY_BIND: `127.0.0.1:${ports.proxy}`,
      PROSPECT_PROXY_STATS_BIND: `127.0.0.1:${ports.stats}`,
    };
    const child = spawn('bash', ['--noprofile', '--norc', '-s'], { cwd: REPOSITORY, env: environment, stdio: ['pipe', 'pipe', 'pipe'] });
    shell = child;
    child.once('exit', cleanUpOnExit({ kill: child.pid! }));
    child.stdout!.on('data', (d: Buffer) => (shellOutput += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (shellOutput += d.toString()));
    shellExit = new Promise((resolve) => child.once('exit', resolve));
    const proxy = `http://127.0.0.1:${ports.proxy}`;
    const publicUrl = `http://localhost:${ports.proxy}`;

    // Stop at the first command that fails, and say so; an operator would read it on their screen.
    child.stdin!.write(`set -euo pipefail\n${blocks.start.join('\n')}\necho "recipe: started"\n`);
    await eventually(() => shellOutput.includes('recipe: started\n') || child.exitCode !== null, 240_000);
    if (!shellOutput.includes('recipe: started\n')) throw new Error(`the recipe stopped (exit ${child.exitCode}):\n${shellOutput}`);
    expect(shellOutput).toContain(`Prospect is up at ${publicUrl}\n`);

    // migrate named the database it migrated, on the server itself (DATABASE_DIRECT_URL), without the password.
    expect(shellOutput).toContain(`Applied ${MIGRATIONS.length} migration(s) to the database prospect@127.0.0.1:${pg.port}/prospect: `);
    const password = (await readFile(join(run, 'db-password'), 'utf8')).trim();
    expect(password).toMatch(/^[0-9a-f]{48}$/);
    expect(shellOutput).not.toContain(password);

    // PgBouncer runs as a user other than root, with the shipped settings and the role's SCRAM verifier.
    const bouncers = (await processesWith(join(run, 'pgbouncer', 'pgbouncer.ini'))).filter((p) => p.cmdline.startsWith('pgbouncer '));
    expect(bouncers).toHaveLength(1);
    expect(bouncers[0]!.uid).not.toBe(0);
    const ini = await readFile(join(run, 'pgbouncer', 'pgbouncer.ini'), 'utf8');
    expect(ini).toContain(`prospect = host=127.0.0.1 port=${pg.port} dbname=prospect connect_query='SET statement_timeout = 5000'`);
    expect(ini).toMatch(/^pool_mode = transaction$/m);
    expect(ini).toContain(`listen_port = ${ports.pgbouncer}\n`);
    expect(await readFile(join(run, 'pgbouncer', 'userlist.txt'), 'utf8')).toMatch(/^"prospect" "SCRAM-SHA-256\$4096:[^"]+"\n$/);

    // Each replica's banner: the public URL (the proxy's) and its own listening address; the database through the pooler.
    for (const [i, port] of ports.api.entries()) {
      const log = await readFile(join(run, `api${i + 1}.log`), 'utf8');
      expect(log).toContain(`Prospect API is running on ${publicUrl}\n`);
      expect(log).toContain(`  Listening on:       127.0.0.1:${port}\n`);
      expect(log).toContain('DATABASE_URL through a pooler (LISTEN and migrations on DATABASE_DIRECT_URL)');
    }

    // A device login through the proxy: start on one replica, poll on the next (round robin).
    const start = await fetch(`${proxy}${ROUTES.deviceStart}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientName: 'prospect CLI', hostname: 'recipe' }),
    });
    expect(start.status).toBe(200);
    const { deviceCode, verificationUrl } = (await start.json()) as { deviceCode: string; verificationUrl: string };
    expect(verificationUrl).toMatch(new RegExp(`^${publicUrl}/device\\?user_code=`));
    const poll = await fetch(`${proxy}${ROUTES.devicePoll}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ deviceCode }) });
    expect(poll.status).toBe(200);
    expect(await poll.json()).toEqual({ status: 'pending' });

    // One request id in haproxy's line and in the replica's lines of that request.
    const requestId = start.headers.get('x-request-id')!;
    expect(await eventually(async () => (await readFile(join(run, 'haproxy.log'), 'utf8')).includes(`reqId="${requestId}"`), 5_000)).toBe(true);
    const apiLogs = async () => (await Promise.all([1, 2, 3].map((n) => readFile(join(run, `api${n}.log`), 'utf8')))).join('');
    expect(await eventually(async () => (await apiLogs()).includes(`"reqId":"${requestId}"`), 5_000)).toBe(true);
    // The replicas sign in to PgBouncer as the role, with its password.
    expect(await readFile(join(run, 'pgbouncer.log'), 'utf8')).toContain('login attempt: db=prospect user=prospect');

    // The recipe's stop, in the same shell: every process it started ends, the replicas cleanly.
    const pids = pidFiles(run);
    expect(Object.keys(pids).sort()).toEqual(['api1', 'api2', 'api3', 'haproxy', 'pgbouncer']);
    child.stdin!.end(`${blocks.stop.join('\n')}\nexit\n`);
    const exitCode = await Promise.race([shellExit, new Promise((resolve) => setTimeout(() => resolve('still running'), scaledTimeout(120_000)))]);
    expect({ exitCode, output: exitCode === 0 ? '' : shellOutput }).toEqual({ exitCode: 0, output: '' });
    expect(await eventually(() => Object.values(pids).every((pid) => !isAlive(pid)), 10_000)).toBe(true);
    expect(await processesWith(join(run, 'pgbouncer', 'pgbouncer.ini'))).toEqual([]);
    for (const n of [1, 2, 3]) expect(await readFile(join(run, `api${n}.log`), 'utf8')).toContain('"msg":"stopped"');
  }, scaledTimeout(420_000));
});
