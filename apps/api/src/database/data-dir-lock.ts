import { randomBytes } from 'node:crypto';
import { link, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The embedded database's directory is in use by another live process. */
export class DataDirInUseError extends Error {
  constructor(dataDir: string, readonly pid: number) {
    super(`${dataDir} is in use by another Prospect API (pid ${pid}); stop it first, or set PROSPECT_DATA_DIR to another directory`);
  }
}

const LOCK_FILE = 'prospect-api.lock';

const pidIn = async (path: string) => Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);

/**
 * One process per embedded data directory: PGlite keeps no lock of its own, and two
 * processes on one directory each see only their own writes and corrupt the files
 * when they stop. The lock is a file holding the holder's pid, put in place whole by
 * `link()` (which fails if it exists), so it is never seen empty. A lock whose pid is
 * not alive (a killed process, or ours from a previous run: in a container the API is
 * always pid 1) is moved aside and taken over; if what was moved aside turns out to be
 * another process's fresh lock, it is put back.
 *
 * Hand-written rather than proper-lockfile: that library tells a stale lock only by
 * its age (a killed instance would block restarts for its stale period) and does not
 * say who holds it.
 *
 * @returns releases the lock (idempotent; leaves alone a lock that is no longer ours).
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const path = join(dataDir, LOCK_FILE);
  const unique = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const mine = `${path}.${unique}`;
  await writeFile(mine, `${process.pid}\n`, { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await link(mine, path);
        return release(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = await pidIn(path);
      if (isAlive(holder)) throw new DataDirInUseError(dataDir, holder);
      const aside = `${path}.stale-${unique}`;
      try {
        await rename(path, aside);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // another process moved it first
        throw err;
      }
      const moved = await pidIn(aside);
      if (moved !== holder && isAlive(moved)) await link(aside, path).catch(() => undefined); // not the stale one: put it back
      await unlink(aside).catch(() => undefined);
    }
    throw new Error(`could not lock ${dataDir}`);
  } finally {
    await unlink(mine).catch(() => undefined);
  }
}

function release(path: string): () => Promise<void> {
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    if ((await pidIn(path)) === process.pid) await unlink(path).catch(() => undefined);
  };
}

function isAlive(pid: number): boolean {
  // Our own pid in a lock is a previous run's (a container restarts as pid 1 again).
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, but another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
