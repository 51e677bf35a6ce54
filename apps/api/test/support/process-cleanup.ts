import { type ChildProcess, spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';

/**
 * What a test file starts outside its own process (API processes, Postgres clusters, PgBouncer,
 * haproxy) ends with the test process, however that ends: normally, by an error, by Ctrl-C or by
 * a SIGTERM or SIGKILL sent to jest (issue #36). pg_ctl starts a cluster in a session of its own,
 * out of reach of a Ctrl-C at the terminal; and jest's sandboxed `process` receives no signal
 * handlers. So each test process keeps a small reaper (reaper.cjs) whose stdin is a pipe from it:
 * when the test process dies, the pipe closes and the reaper ends what was left running.
 */
type Cleanup = { kill: number } | { run: string[] };

let reaper: ChildProcess | undefined;
let lastId = 0;

function theReaper(): ChildProcess {
  if (!reaper) {
    reaper = spawn(process.execPath, [join(process.cwd(), 'test/support/reaper.cjs')], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    // Neither keeps the test process alive.
    reaper.unref();
    (reaper.stdin as unknown as { unref(): void }).unref();
  }
  return reaper;
}

/** Ends `what` (kills the process, or runs the command) when this test process ends, unless the returned function is called first (the test stopped it itself). */
export function cleanUpOnExit(what: Cleanup): () => void {
  const id = ++lastId;
  theReaper().stdin!.write(`${JSON.stringify({ id, ...what })}\n`);
  return () => void reaper?.stdin?.write(`${JSON.stringify({ id, done: true })}\n`);
}

/**
 * A wait's bound scaled to how busy the machine is: on 2 cores already busy with other work, a
 * process takes longer to start and a statement longer to run, and a fixed bound turns that into
 * a failure (issue #36). The 1-minute load average per core, at least 1, at most 4; TEST_TIME_SCALE
 * overrides it.
 */
export function scaledTimeout(ms: number): number {
  const fromEnv = Number(process.env.TEST_TIME_SCALE);
  const factor = Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : Math.min(4, Math.max(1, loadavg()[0]! / cpus().length));
  return Math.round(ms * factor);
}

/** Whether a process with this id is still running (signal 0 only asks). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
