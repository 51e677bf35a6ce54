import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ENV, SERVICE_NAME, SESSION_FILE_NAME, type SessionFile, SessionFileSchema } from '@prospect/contract';

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
  | { kind: 'session'; session: SessionFile };

/** The session file: read with the contract's schema, written atomically with owner-only modes. */
export class SessionStore {
  readonly path: string;
  /** @param warn where to say that an existing directory is open to others (stderr). */
  constructor(
    readonly dir: string,
    private readonly warn: (line: string) => void = () => undefined,
  ) {
    this.path = join(dir, SESSION_FILE_NAME);
  }

  /** Never throws for a bad file: a corrupt, partial or wrongly typed one counts as no session. */
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
    const parsed = SessionFileSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const where = issue.path.length ? issue.path.join('.') : 'file';
      return { kind: 'invalid', reason: `${this.path} is not a valid session (${where}: ${issue.message})` };
    }
    return { kind: 'session', session: parsed.data };
  }

  /** Temp file + rename in the same directory: a crash never leaves half a session. */
  async write(session: SessionFile): Promise<void> {
    const valid = SessionFileSchema.parse(session);
    await this.ensureDir();
    // Unique enough with 'wx' (which refuses an existing file); node:crypto would cost startup time.
    const temp = join(this.dir, `.${SESSION_FILE_NAME}.${process.pid}.${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}.tmp`);
    try {
      await writeFile(temp, `${JSON.stringify(valid, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
      await rename(temp, this.path);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
  }

  /**
   * Creates the directory owner-only. One that exists is left as it is, even if others
   * may read it: PROSPECT_CONFIG_DIR could be $HOME. The session file itself is 0600.
   */
  async ensureDir(): Promise<void> {
    const created = await mkdir(this.dir, { recursive: true, mode: 0o700 });
    if (created !== undefined) return;
    const { mode } = await stat(this.dir);
    if (mode & 0o077) {
      this.warn(`Warning: ${this.dir} can be read by other users (mode ${(mode & 0o777).toString(8)}); the session file in it is readable by you only.`);
    }
  }

  /** Idempotent: removing a missing file is fine. */
  async remove(): Promise<boolean> {
    try {
      await rm(this.path);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }
}
