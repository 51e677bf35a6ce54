// Child processes, /proc readers and the machine description, shared by bench/run.mjs and
// bench/soak.mjs.
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { ROOT, sleep } from './util.mjs';

export const READY_TIMEOUT_MS = 60_000;
export const STOP_TIMEOUT_MS = 15_000;

/** A port free on the loopback interface right now. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** SIGTERM, then SIGKILL after STOP_TIMEOUT_MS; resolves once the child has exited. */
export async function stopChild(child, log) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = sleep(STOP_TIMEOUT_MS).then(() => 'timeout');
  if ((await Promise.race([child.exited, timer])) === 'timeout') {
    log(`${child.label} did not stop within ${STOP_TIMEOUT_MS / 1000} s; killing it`);
    child.kill('SIGKILL');
    await child.exited;
  }
}

export function tail(file, lines = 15) {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

export async function waitReady(child, url, timeoutMs = READY_TIMEOUT_MS) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${child.label} exited during startup:\n${tail(`${child.logBase}.err.log`)}\n${tail(`${child.logBase}.out.log`)}`);
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`${child.label} not ready at ${url} within ${timeoutMs / 1000} s:\n${tail(`${child.logBase}.err.log`)}`);
}

/** A `kB` field of /proc/<pid>/status (VmRSS, VmHWM, …) in bytes, or undefined. */
export function readProcStatus(pid, field) {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

// CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat.
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;
export function cpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3, "state"
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime
  } catch {
    return undefined;
  }
}

/** Newlines in a file, read in chunks (a soak's request log runs to hundreds of MB); 0 if it cannot be read. */
export function countLines(file) {
  let fd;
  try {
    fd = openSync(file, 'r');
  } catch {
    return 0;
  }
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let lines = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) return lines;
      for (let i = buf.indexOf(10); i !== -1 && i < n; i = buf.indexOf(10, i + 1)) lines++;
    }
  } catch {
    return 0;
  } finally {
    closeSync(fd);
  }
}

// ── machine ──────────────────────────────────────────────────────────────────
const DIRTY_PATHS = ['apps/api', 'libs/contract', 'bench/floor', 'bench/floor-stack', 'bench/oidc'];

/** CPU, RAM, kernel, Node, Postgres, commit (`+ uncommitted changes` when any of `dirtyPaths` is), load average now. */
export function machineInfo(pgVersion, dirtyPaths = DIRTY_PATHS) {
  let model = os.cpus()[0]?.model?.trim() || 'unknown CPU';
  try {
    model = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? model;
  } catch {
    // not Linux
  }
  const git = (args) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' }).stdout?.trim() ?? '';
  const dirty = git(['status', '--porcelain', '--', ...dirtyPaths]) ? ' + uncommitted changes' : '';
  return {
    cpus: os.availableParallelism?.() ?? os.cpus().length,
    model,
    memGiB: (os.totalmem() / 2 ** 30).toFixed(1),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    postgres: pgVersion,
    commit: `${git(['rev-parse', '--short', 'HEAD']) || 'unknown'}${dirty}`,
    // Anything else running shares the cores with the load; say how busy the machine was.
    loadBefore: os.loadavg()[0].toFixed(2),
    oidcProvider: JSON.parse(readFileSync(join(ROOT, 'node_modules/oidc-provider/package.json'), 'utf8')).version,
  };
}
