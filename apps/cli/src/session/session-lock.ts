import { CliError, FileSystemError } from '../errors.js';
import type { SessionStore } from './session-store.js';

/** How long a second CLI process waits for the first one's session change before giving up. */
export const LOCK_WAIT_MS = 10_000;
/** A lock untouched this long belongs to a process that died holding it: it is taken over. */
const LOCK_STALE_MS = 15_000;
const RETRY_EVERY_MS = 100;

/**
 * Runs `change` holding the lock beside the session file (`auth-session.json.lock`), so two
 * prospect processes never refresh, write or remove the session at once. proper-lockfile makes
 * the lock an exclusive mkdir, keeps it fresh while held, and takes over a stale one. Only
 * contention is waited for (up to LOCK_WAIT_MS); any other failure (a read-only directory)
 * is said at once.
 */
export async function withSessionLock<T>(store: SessionStore, change: () => Promise<T>): Promise<T> {
  // Loaded on first use: most runs never change the session, and startup time counts.
  const { lock } = await import('proper-lockfile');
  const cannotLock = (err: unknown) =>
    new CliError(
      `Cannot lock the session file in ${store.dir}: ${FileSystemError.from(err)?.reason ?? (err as NodeJS.ErrnoException).code ?? (err as Error).message}.`,
      1,
      'Check that the directory is writable (PROSPECT_CONFIG_DIR).',
    );
  // The lock lives beside the session: its directory must exist (a first login creates it).
  await store.ensureDir().catch((err: unknown) => {
    throw cannotLock(err);
  });
  const deadline = Date.now() + LOCK_WAIT_MS;
  let release: () => Promise<void>;
  for (;;) {
    try {
      release = await lock(store.path, {
        realpath: false,
        stale: LOCK_STALE_MS,
        // Held past `stale` (a laptop asleep mid-refresh): the change still ends; the default throws from a timer.
        onCompromised: () => undefined,
      });
      break;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ELOCKED') throw cannotLock(err);
      if (Date.now() >= deadline) {
        throw new CliError(
          `Another prospect process is changing the session and did not finish within ${LOCK_WAIT_MS / 1000} s.`,
          1,
          `If no other prospect is running, remove ${store.path}.lock and try again.`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_EVERY_MS));
    }
  }
  try {
    return await change();
  } finally {
    await release().catch(() => undefined);
  }
}
