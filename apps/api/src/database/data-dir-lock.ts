import { open, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** The embedded database's directory is in use by another live process. */
export class DataDirInUseError extends Error {
  constructor(dataDir: string, readonly pid: number) {
    super(`${dataDir} is in use by another Prospect API (pid ${pid}); stop it first, or set PROSPECT_DATA_DIR to another directory`);
  }
}

const LOCK_FILE = 'prospect-api.lock';

/**
 * One process per embedded data directory: PGlite keeps no lock of its own, and two
 * processes on one directory each see only their own writes and corrupt the files
 * when they stop. The lock is a file created exclusively (O_EXCL) holding the
 * holder's pid; a lock whose pid is no longer alive (a killed process) is taken over.
 *
 * Hand-written rather than proper-lockfile: that library tells a stale lock only by
 * its age (a killed instance would block restarts for its stale period) and does not
 * say who holds it.
 *
 * @returns releases the lock (idempotent).
 */
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const file = await open(path, 'wx', 0o600);
      await file.writeFile(`${process.pid}\n`);
      await file.close();
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        await unlink(path).catch(() => undefined);
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
    if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) throw new DataDirInUseError(dataDir, holder);
    // Stale. Renaming is atomic: of two processes taking over at once, one gets ENOENT and tries again.
    await rename(path, `${path}.stale-${process.pid}`)
      .then(() => unlink(`${path}.stale-${process.pid}`))
      .catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
  }
  throw new Error(`could not lock ${dataDir}`);
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, but another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
