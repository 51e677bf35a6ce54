import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SessionFile } from '@prospect/contract';
import { fileFormOf, type KeptSession, parseStoredSession } from './kept-secrets.js';
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
 * and changed only under the session's lock (session-lock.ts, by accounts.ts). An account kept in
 * the OS keychain is written without its tokens, as the session file holds one (kept-secrets.ts);
 * its keychain entry is the account's, wherever its session is, so moving it between the two
 * files never touches the keychain.
 */
export class AccountsFile {
  readonly path: string;
  constructor(private readonly store: SessionStore) {
    this.path = join(store.dir, ACCOUNTS_FILE_NAME);
  }

  /**
   * Never throws for a bad file, as the session file's read does not: a missing, corrupt or
   * wrongly shaped file holds no account, and an entry the schema refuses is left out (as is
   * one whose tokens are gone from the keychain). A keychain that cannot be used throws a
   * KeychainError: an account out of reach must not be dropped by the next write.
   */
  async read(): Promise<KeptSession[]> {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(this.path, 'utf8'));
    } catch {
      return [];
    }
    const entries = (json as { accounts?: unknown } | null)?.accounts;
    if (!Array.isArray(entries)) return [];
    const parsed = [];
    // One at a time: a keychain may ask to be unlocked, and should be asked once.
    for (const entry of entries) parsed.push(await parseStoredSession(entry, this.store.keychain, this.path));
    return parsed.flatMap((read) => (read.kind === 'session' ? [read.session] : []));
  }

  /** No account left: no file. */
  async write(accounts: SessionFile[]): Promise<void> {
    if (!accounts.length) {
      await this.store.removeFile(this.path);
      return;
    }
    const valid = accounts.map(fileFormOf);
    await this.store.writeAtomically(this.path, `${JSON.stringify({ accounts: valid }, null, 2)}\n`);
  }
}
