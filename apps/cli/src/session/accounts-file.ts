import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type SessionFile, SessionFileSchema } from '@prospect/contract';
import type { SessionStore } from './session-store.js';

/** Beside auth-session.json: the accounts that are stored but not active. */
export const ACCOUNTS_FILE_NAME = 'auth-accounts.json';

/**
 * The stored accounts other than the active one, most recently active first: each a session
 * exactly as auth-session.json holds one (the contract's schema), so switching to one is
 * writing it there. The active session is never kept here, so a refresh has only its own file
 * to write and no copy can fall behind it.
 *
 * `{ "accounts": [<session>, …] }`, written as the session file is (temp file and rename, 0600)
 * and changed only under the session's lock (session-lock.ts, by accounts.ts).
 */
export class AccountsFile {
  readonly path: string;
  constructor(private readonly store: SessionStore) {
    this.path = join(store.dir, ACCOUNTS_FILE_NAME);
  }

  /**
   * Never throws for a bad file, as the session file's read does not: a missing, corrupt or
   * wrongly shaped file holds no account, and an entry the schema refuses is left out.
   */
  async read(): Promise<SessionFile[]> {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(this.path, 'utf8'));
    } catch {
      return [];
    }
    const entries = (json as { accounts?: unknown } | null)?.accounts;
    if (!Array.isArray(entries)) return [];
    return entries.flatMap((entry) => {
      const parsed = SessionFileSchema.safeParse(entry);
      return parsed.success ? [parsed.data] : [];
    });
  }

  /** No account left: no file. */
  async write(accounts: SessionFile[]): Promise<void> {
    if (!accounts.length) {
      await this.store.removeFile(this.path);
      return;
    }
    const valid = accounts.map((account) => SessionFileSchema.parse(account));
    await this.store.writeAtomically(this.path, `${JSON.stringify({ accounts: valid }, null, 2)}\n`);
  }
}
