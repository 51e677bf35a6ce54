import { mkdir, readdir, rmdir, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { CliError, FileSystemError } from '../errors.js';
import type { SessionStore } from './session-store.js';

/** How long a second CLI process waits for the first one's session change before giving up. */
export const LOCK_WAIT_MS = 10_000;
/** How often the holder touches its lock, so that a lock untouched for LOCK_STALE_MS has nobody behind it. */
export const LOCK_TOUCH_MS = 1_000;
/**
 * A lock untouched this long is taken over, whoever owns it: its holder stopped (killed on
 * another machine sharing the directory, or its pid reused since). Well under LOCK_WAIT_MS, so a
 * command that finds such a lock takes it over within its wait instead of failing; and five
 * touches long, so a holder's event loop can stall for seconds without losing it.
 */
export const LOCK_STALE_MS = 5_000;
const RETRY_EVERY_MS = 100;

/**
 * Runs `change` holding the lock beside the session file, so two prospect processes never
 * refresh, write or remove the session at once.
 *
 * The lock is the directory `auth-session.json.lock`, made with an exclusive mkdir, holding one
 * empty file whose name says who holds it (`owner.<pid>.<nonce>.<host>`: a name, not content, so
 * it is made even where no byte can be written). A lock is taken over at once when its owner is
 * a process of this machine that no longer runs (kill -9, a crash, a power cut), and, whoever the
 * owner, once it is untouched for LOCK_STALE_MS. Only contention is waited for (up to
 * LOCK_WAIT_MS); any other failure (a read-only directory) is said at once.
 *
 * Hand-written, as the API's data-directory lock is, rather than proper-lockfile: that library
 * tells an abandoned lock only by its age, and its lock holds nothing that says whose it is.
 */
export async function withSessionLock<T>(store: SessionStore, change: () => Promise<T>): Promise<T> {
  // The lock lives beside the session: its directory must exist (a first login creates it).
  await store.ensureDir().catch((err: unknown) => {
    throw cannotLock(store, err);
  });
  const lockDir = `${store.path}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  let held: HeldLock | 'cleared' | 'busy';
  while (typeof (held = await tryLock(store, lockDir)) === 'string') {
    // An abandoned lock just cleared: at once, and only then, try again without a pause.
    if (held === 'cleared') continue;
    if (Date.now() >= deadline) {
      throw new CliError(
        `Another prospect process is changing the session and did not finish within ${LOCK_WAIT_MS / 1000} s.`,
        1,
        `If no other prospect is running, remove ${lockDir} and try again.`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_EVERY_MS));
  }
  try {
    return await change();
  } finally {
    await held.release();
  }
}

interface HeldLock {
  release(): Promise<void>;
}

function cannotLock(store: SessionStore, err: unknown): CliError {
  return new CliError(
    `Cannot lock the session file in ${store.dir}: ${FileSystemError.from(err)?.reason ?? (err as NodeJS.ErrnoException).code ?? (err as Error).message}.`,
    1,
    'Check that the directory is writable (PROSPECT_CONFIG_DIR).',
  );
}

const code = (err: unknown) => (err as NodeJS.ErrnoException).code;

/** The lock; or 'busy' while another process holds it; or 'cleared' when it was abandoned and is no more. */
async function tryLock(store: SessionStore, lockDir: string): Promise<HeldLock | 'cleared' | 'busy'> {
  try {
    await mkdir(lockDir, { mode: 0o700 });
  } catch (err) {
    if (code(err) !== 'EEXIST') throw cannotLock(store, err);
    try {
      return (await clearIfAbandoned(lockDir)) ? 'cleared' : 'busy';
    } catch (cause) {
      throw cannotLock(store, cause);
    }
  }
  const ownerFile = ownerName();
  const owner = join(lockDir, ownerFile);
  // Counted as held before its file exists: another wait of this same process that finds the
  // file meanwhile must not take this process's pid in it for a previous run's.
  heldHere.add(ownerFile);
  try {
    await writeFile(owner, '', { flag: 'wx', mode: 0o600 });
    // By this process's clock, as every later touch: staleness is judged by the same clock.
    await touch(lockDir);
  } catch (err) {
    heldHere.delete(ownerFile);
    await unlink(owner).catch(() => undefined);
    await rmdir(lockDir).catch(() => undefined);
    throw cannotLock(store, err);
  }
  const touching = setInterval(() => void touch(lockDir).catch(() => undefined), LOCK_TOUCH_MS);
  // Never what keeps the process alive.
  touching.unref();
  return {
    async release() {
      clearInterval(touching);
      heldHere.delete(ownerFile);
      try {
        await unlink(owner);
      } catch {
        // Taken over while this process was stopped (Ctrl-Z, a laptop asleep): the lock is
        // another process's now, and stays.
        return;
      }
      await rmdir(lockDir).catch(() => undefined);
    },
  };
}

const touch = (lockDir: string) => {
  const now = new Date();
  return utimes(lockDir, now, now);
};

const OWNER = /^owner\.(\d+)\.([a-z0-9]+)\.(.*)$/;
/** The owner files of the locks this process holds now: its pid in any other is a previous run's (in a container, prospect may run as pid 1 every time). */
const heldHere = new Set<string>();

function ownerName(): string {
  return `owner.${process.pid}.${Math.random().toString(36).slice(2, 10) || '0'}.${encodeURIComponent(hostname())}`;
}

/**
 * Clears the lock when nobody is behind it, and says whether it is gone. The owner's file is
 * removed first, by its exact name: of two processes clearing the same abandoned lock only one
 * removes it, and the other never touches the lock the first then makes. Removing it touches the
 * directory, so nobody judges the emptied lock stale meanwhile. (A lock without an owner's file,
 * left by a crash between its mkdir and its owner's file or by an older prospect, is cleared
 * by its age alone, as proper-lockfile did.)
 */
async function clearIfAbandoned(lockDir: string): Promise<boolean> {
  let names: string[];
  let touchedAt: number;
  try {
    names = await readdir(lockDir);
    touchedAt = (await stat(lockDir)).mtimeMs;
  } catch (err) {
    // Released meanwhile.
    if (code(err) === 'ENOENT') return true;
    throw err;
  }
  const ownerFile = names.find((name) => OWNER.test(name));
  const untouched = Date.now() - touchedAt > LOCK_STALE_MS;
  if (!untouched && !(ownerFile && ownerIsGone(ownerFile))) return false;
  try {
    if (ownerFile) await unlink(join(lockDir, ownerFile));
    await rmdir(lockDir);
  } catch (err) {
    // Another process cleared it first (and may hold it now), or something else is in it: wait, as for any holder.
    if (code(err) === 'ENOENT' || code(err) === 'ENOTEMPTY' || code(err) === 'EEXIST') return false;
    throw err;
  }
  return true;
}

/** True when the owner is a process of this machine that no longer runs. Another machine's owner is judged by its touches alone. */
function ownerIsGone(name: string): boolean {
  const [, pid, , host] = OWNER.exec(name)!;
  let ownerHost: string;
  try {
    ownerHost = decodeURIComponent(host!);
  } catch {
    return false;
  }
  if (ownerHost !== hostname()) return false;
  if (Number(pid) === process.pid) return !heldHere.has(name);
  try {
    // Signal 0 only asks whether the process exists.
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    // EPERM: it runs, as another user.
    return code(err) === 'ESRCH';
  }
}
