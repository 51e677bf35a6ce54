/**
 * The session's lock (session/session-lock.ts) against the locks other processes leave: a
 * holder that no longer runs is replaced at once, a live one is waited for however long its
 * change takes, and one nobody touches any more is taken over within a command's wait.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, rmdir, unlink, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOCK_STALE_MS, LOCK_WAIT_MS, withSessionLock } from '../src/session/session-lock.js';
import { SessionStore } from '../src/session/session-store.js';

let dir: string;
let store: SessionStore;
let lockDir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prospect-lock-'));
  store = new SessionStore(dir);
  lockDir = `${store.path}.lock`;
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/** A lock as another prospect process leaves it: the directory and its owner's file. */
async function lockHeldBy(pid: number, host = hostname()): Promise<string> {
  await mkdir(lockDir);
  const owner = join(lockDir, `owner.${pid}.k3y.${encodeURIComponent(host)}`);
  await writeFile(owner, '');
  return owner;
}

/** The pid of a process that ran and is gone (as after kill -9). */
async function pidOfAnEndedProcess(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

const age = (path: string, ms: number) => utimes(path, new Date(Date.now() - ms), new Date(Date.now() - ms));

it('a lock whose owner no longer runs on this machine is taken over at once, and released after the change', async () => {
  await lockHeldBy(await pidOfAnEndedProcess());
  await expect(withSessionLock(store, async () => readdir(lockDir))).resolves.toEqual([expect.stringMatching(new RegExp(`^owner\\.${process.pid}\\.`))]);
  expect(existsSync(lockDir)).toBe(false);
});

it("this process's own pid in a lock it does not hold is a previous run's (a container's pid 1 every time): taken over at once", async () => {
  await lockHeldBy(process.pid);
  await expect(withSessionLock(store, async () => 'ran')).resolves.toBe('ran');
  expect(existsSync(lockDir)).toBe(false);
});

/** The holder of the lock `owner` finishes its change a little later and releases it; whether it has. */
function releasedLater(owner: string): () => boolean {
  let released = false;
  setTimeout(() => {
    released = true;
    void unlink(owner).then(() => rmdir(lockDir));
  }, 300);
  return () => released;
}

it('a lock whose owner runs is waited for until it is released, and only then taken', async () => {
  const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
  try {
    const released = releasedLater(await lockHeldBy(holder.pid!));
    await expect(withSessionLock(store, async () => released())).resolves.toBe(true);
  } finally {
    holder.kill();
  }
});

it("another machine's lock is not judged by its pid: waited for while it is touched", async () => {
  const released = releasedLater(await lockHeldBy(await pidOfAnEndedProcess(), 'another-machine.example'));
  await expect(withSessionLock(store, async () => released())).resolves.toBe(true);
});

it('a lock nobody touches any more is taken over within the wait of a command, whoever owns it', async () => {
  expect(LOCK_STALE_MS).toBeLessThan(LOCK_WAIT_MS);
  // Touched a moment ago by a holder on another machine that then died: its pid tells nothing here.
  await lockHeldBy(4_000_000, 'another-machine.example');
  await expect(withSessionLock(store, async () => 'ran')).resolves.toBe('ran');
  // An older prospect's lock (a bare directory), untouched for long: taken over too.
  await mkdir(lockDir);
  await age(lockDir, LOCK_STALE_MS + 60_000);
  await expect(withSessionLock(store, async () => 'ran again')).resolves.toBe('ran again');
});

it('a change that takes longer than the staleness bound keeps its lock: the holder touches it', async () => {
  const order: string[] = [];
  const slow = withSessionLock(store, async () => {
    order.push('slow starts');
    await new Promise((resolve) => setTimeout(resolve, LOCK_STALE_MS + 1_500));
    order.push('slow ends');
  });
  while (!existsSync(lockDir)) await new Promise((resolve) => setTimeout(resolve, 10));
  const second = withSessionLock(store, async () => {
    order.push('second runs');
  });
  await Promise.all([slow, second]);
  expect(order).toEqual(['slow starts', 'slow ends', 'second runs']);
});
