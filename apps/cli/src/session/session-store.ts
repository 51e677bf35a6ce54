import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { ENV, SERVICE_NAME, SESSION_FILE_NAME, type SessionFile } from '@prospect/contract';
import { FileSystemError } from '../errors.js';
import { fileFormOf, forgetSecrets, inKeychain, type KeptSession, keychainEntryOf, parseStoredSession, saveSecrets } from './kept-secrets.js';
import { type Keychain, KeychainError, osKeychain } from './keychain.js';

/** `$PROSPECT_CONFIG_DIR`, else `$XDG_CONFIG_HOME/prospect`, else `~/.config/prospect` (seed §2.4). */
export function configDir(env: NodeJS.ProcessEnv): string {
  const override = env[ENV.configDir];
  if (override) return override;
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, SERVICE_NAME);
}

export type SessionRead =
  | { kind: 'none' }
  | { kind: 'invalid'; reason: string }
  | { kind: 'session'; session: KeptSession };

/**
 * The session file: read with the contract's schema, written atomically with owner-only modes.
 * A session opted in to the OS keychain (kept-secrets.ts) has its tokens there and the rest here.
 */
export class SessionStore {
  readonly path: string;
  private warned = false;
  /**
   * @param warn where to say that an existing directory is open to others (stderr).
   * @param keychain where sessions kept in the keychain have their tokens (tests hand in one in memory).
   */
  constructor(
    readonly dir: string,
    readonly warn: (line: string) => void = () => undefined,
    readonly keychain: Keychain = osKeychain,
  ) {
    this.path = join(dir, SESSION_FILE_NAME);
  }

  /**
   * Never throws for a bad file: a corrupt, partial or wrongly typed one counts as no session.
   * A session whose tokens are in a keychain that cannot be used throws a KeychainError: it is
   * out of reach, not bad, and nothing may remove or replace it for that.
   */
  async read(): Promise<SessionRead> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'none' };
      return { kind: 'invalid', reason: `cannot read ${this.path} (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return { kind: 'invalid', reason: `${this.path} is not valid JSON` };
    }
    return parseStoredSession(json, this.keychain, this.path);
  }

  /**
   * Temp file + rename in the same directory: a crash, a full disk or a read-only directory
   * never leaves half a session, and the previous file stays as it was. A refusal of the
   * machine is a FileSystemError naming the session file; the temp file is removed.
   *
   * A session kept in the keychain has its tokens put there first (a KeychainError if they
   * cannot be), then the rest here: a crash between the two leaves the new tokens beside the
   * previous expiry, which only makes the next command renew them early.
   */
  async write(session: SessionFile): Promise<void> {
    const form = fileFormOf(session);
    await saveSecrets(this.keychain, session);
    await this.writeAtomically(this.path, `${JSON.stringify(form, null, 2)}\n`);
  }

  /** Writes `path`, a file of this directory, as the session file is written: whole or not at all, readable by its owner only. */
  async writeAtomically(path: string, text: string): Promise<void> {
    const temp = this.tempPath();
    try {
      await this.ensureDir();
      await writeFile(temp, text, { mode: 0o600, flag: 'wx' });
      await rename(temp, path);
    } catch (err) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw FileSystemError.from(err, path) ?? err;
    }
  }

  /** Removes `path`, a file of this directory; idempotent: removing a missing file is fine. */
  async removeFile(path: string): Promise<boolean> {
    try {
      await rm(path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  /**
   * Proves a session can be saved here before a login asks anything of the server (a login
   * redeemed there but never saved here would be a live session nobody holds): creates the
   * directory if needed, then writes and removes a probe file, so a full disk shows as well
   * as a read-only directory. Throws a FileSystemError naming the directory.
   */
  async checkWritable(): Promise<void> {
    const probe = this.tempPath();
    try {
      await this.ensureDir();
      await writeFile(probe, 'prospect checks that it can save a session here\n', { mode: 0o600, flag: 'wx' });
      await rm(probe);
    } catch (err) {
      await rm(probe, { force: true }).catch(() => undefined);
      throw FileSystemError.from(err, this.dir) ?? err;
    }
  }

  /** Unique enough with 'wx' (which refuses an existing file); node:crypto would cost startup time. */
  private tempPath(): string {
    return join(this.dir, `.${SESSION_FILE_NAME}.${process.pid}.${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}.tmp`);
  }

  /**
   * Creates the directory owner-only. One that exists is left as it is, even if others
   * may read it: PROSPECT_CONFIG_DIR could be $HOME. The session file itself is 0600.
   */
  async ensureDir(): Promise<void> {
    const created = await mkdir(this.dir, { recursive: true, mode: 0o700 }).catch(async (err: unknown) => {
      // Node's recursive mkdir says ENOENT when it cannot create a missing directory on a
      // read-only file system: the first missing one, made alone, says why.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      let missing = this.dir;
      while (!existsSync(dirname(missing)) && dirname(missing) !== missing) missing = dirname(missing);
      await mkdir(missing, { mode: 0o700 });
      // It could be made after all (another process made its parent meanwhile): go on.
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      return missing;
    });
    if (created !== undefined || this.warned) return;
    const { mode } = await stat(this.dir);
    if (mode & 0o077) {
      // Once: a login checks, locks and writes, each through here.
      this.warned = true;
      this.warn(`Warning: ${this.dir} can be read by other users (mode ${(mode & 0o777).toString(8)}); the session file in it is readable by you only.`);
    }
  }

  /**
   * Idempotent: removing a missing file is fine. The tokens of a session kept in the keychain
   * go with it, when the keychain can be used; when not, the file still goes (the session is
   * over: refused by the server, or logged out) and a warning says which entry is left.
   */
  async remove(): Promise<boolean> {
    const kept = await this.readMarkedAccount();
    const removed = await this.removeFile(this.path);
    if (kept) await this.forgetSecretsOf(kept);
    return removed;
  }

  /** Deletes an account's keychain entry, best effort: when the keychain cannot be used, says what is left behind. */
  async forgetSecretsOf(account: Pick<SessionFile, 'apiBaseUrl' | 'user'>): Promise<void> {
    try {
      await forgetSecrets(this.keychain, account);
    } catch (err) {
      if (!(err instanceof KeychainError)) throw err;
      const { service, account: id } = keychainEntryOf(account);
      this.warn(`Warning: could not delete the tokens from the OS keychain (${err.reason}); delete its entry ${service} / ${id} yourself.`);
    }
  }

  /** The account of the session file when it is kept in the keychain, from the file alone (its tokens are not needed to forget them). */
  private async readMarkedAccount(): Promise<Pick<SessionFile, 'apiBaseUrl' | 'user'> | undefined> {
    try {
      const json = JSON.parse(await readFile(this.path, 'utf8')) as Partial<KeptSession> | null;
      return json && inKeychain(json as SessionFile) && typeof json.apiBaseUrl === 'string' && URL.canParse(json.apiBaseUrl) && typeof json.user?.id === 'string' ? { apiBaseUrl: json.apiBaseUrl, user: json.user } : undefined;
    } catch {
      return undefined;
    }
  }
}
