import type { SessionFile } from '@prospect/contract';
import { CliError } from '../errors.js';
import { AccountsFile } from './accounts-file.js';
import { inKeychain, serviceAccountOf } from './kept-secrets.js';
import { withSessionLock } from './session-lock.js';
import type { SessionRead, SessionStore } from './session-store.js';

type Account = Pick<SessionFile, 'apiBaseUrl' | 'user'>;

/** An account is one person on one server: a new login of it replaces its session instead of adding one. */
export const sameAccount = (a: Account, b: Account) => a.apiBaseUrl === b.apiBaseUrl && a.user.id === b.user.id;

export interface StoredAccounts {
  /** auth-session.json as read: the active session, none, or a file that is not a session. */
  active: SessionRead;
  /** The other accounts, most recently active first; never the active one. */
  others: SessionFile[];
}

export const activeOf = (accounts: StoredAccounts): SessionFile | undefined => (accounts.active.kind === 'session' ? accounts.active.session : undefined);

/** Every stored account, the active one first. */
export const allOf = (accounts: StoredAccounts): SessionFile[] => [...(accounts.active.kind === 'session' ? [accounts.active.session] : []), ...accounts.others];

/** The first session of each account. */
const distinct = (sessions: SessionFile[]) => sessions.filter((session, i) => sessions.findIndex((other) => sameAccount(other, session)) === i);

export interface LoggedOut<R> {
  /** The session logged out of and what `end` said of it; undefined when the active file was not a session. */
  ended?: { session: SessionFile; result: R };
  /** It was the active one (or the unreadable file in its place). */
  wasActive: boolean;
  /** The account made active in its place, if one was. */
  nowActive?: SessionFile;
}

/**
 * Several accounts, on several servers, as `gh` keeps them: auth-session.json stays the
 * active session exactly as the contract says (every command and the guard read it alone);
 * the others wait in auth-accounts.json (accounts-file.ts). Every change takes the session's
 * lock and re-reads both files under it, so it never undoes a refresh or login of another process.
 */
export class Accounts {
  private readonly file: AccountsFile;
  constructor(private readonly store: SessionStore) {
    this.file = new AccountsFile(store);
  }

  get path(): string {
    return this.file.path;
  }

  /** Both files as they are now. Without the lock: for reports, and for choices a change checks again under it. */
  async read(): Promise<StoredAccounts> {
    const [active, stored] = await Promise.all([this.store.read(), this.file.read()]);
    // A copy of the active account left by a change that stopped halfway is older than the active file: it is not an account of its own.
    const current = active.kind === 'session' ? active.session : undefined;
    return { active, others: distinct(stored.filter((account) => !current || !sameAccount(account, current))) };
  }

  /**
   * A login's session becomes the active one. The account active until now is kept among the
   * others, unless it is the same account, whose session the new one replaces (as it replaces a
   * stored one of it), keeping the organization chosen for it. Says which sessions were replaced,
   * to end them on their server, and which account was kept.
   */
  logIn(login: SessionFile): Promise<{ replaced: SessionFile[]; kept?: SessionFile }> {
    return withSessionLock(this.store, async () => {
      const before = await this.read();
      // The organization chosen for this account (org:switch) outlives a new login of it, as gh keeps an account's settings.
      const organization = allOf(before).find((stored) => sameAccount(stored, login))?.organization;
      const session = login.organization || !organization ? login : { ...login, organization };
      const previous = activeOf(before);
      // A service account's session (an hour at most, never renewed: CI's) is replaced, never kept for a switch back.
      const kept = previous && !sameAccount(previous, session) && !serviceAccountOf(previous) ? previous : undefined;
      const replaced = [...(previous && !kept ? [previous] : []), ...before.others.filter((other) => sameAccount(other, session))];
      const others = [...(kept ? [kept] : []), ...before.others.filter((other) => !sameAccount(other, session))];
      await this.commit(before, others, { session });
      return { replaced, kept };
    });
  }

  /** Makes a stored account the active one; the active one until now goes first among the others. */
  switchTo(target: Account): Promise<{ now: SessionFile; previous?: SessionFile; already: boolean }> {
    return withSessionLock(this.store, async () => {
      const before = await this.read();
      const previous = activeOf(before);
      if (previous && sameAccount(previous, target)) return { now: previous, already: true };
      const chosen = before.others.find((other) => sameAccount(other, target));
      if (!chosen) throw new CliError(`${target.user.email} on ${target.apiBaseUrl} was logged out meanwhile.`, 1, 'See the stored accounts with `prospect auth:status`.');
      const others = [...(previous ? [previous] : []), ...before.others.filter((other) => other !== chosen)];
      await this.commit(before, others, { session: chosen });
      return { now: chosen, previous, already: false };
    });
  }

  /**
   * Forgets an account, after `end` (revoking it on the server) has run on its session as
   * stored now. `target` undefined is the active file, whatever it holds (a corrupt one is
   * removed). Logging out the active account makes another active: one of the same server if
   * there is one, else the most recently active; or none.
   */
  logOut<R>(target: Account | undefined, end: (session: SessionFile) => Promise<R>): Promise<LoggedOut<R>> {
    return withSessionLock(this.store, async () => {
      const before = await this.read();
      const previous = activeOf(before);
      const stored = target && before.others.find((other) => sameAccount(other, target));
      if (stored) {
        const result = await end(stored);
        await this.commit(before, before.others.filter((other) => other !== stored));
        return { ended: { session: stored, result }, wasActive: false };
      }
      // The active file, when it is the target or none is named; an account gone meanwhile is no more to log out of.
      if (target && !(previous && sameAccount(previous, target))) return { wasActive: false };
      const ended = previous ? { session: previous, result: await end(previous) } : undefined;
      const server = previous?.apiBaseUrl ?? target?.apiBaseUrl;
      const nowActive = before.others.find((other) => other.apiBaseUrl === server) ?? before.others[0];
      await this.commit(before, before.others.filter((other) => other !== nowActive), { session: nowActive });
      return { ended, wasActive: before.active.kind !== 'none', nowActive };
    });
  }

  /**
   * Writes a change so that a crash at any point leaves the accounts as they were or as they
   * are to be: first the accounts file with every account of both (read() ignores a stored
   * copy of the active one), then the session file, then the accounts file as it ends.
   * `active` undefined leaves the session file as it is; `{ session: undefined }` removes it.
   *
   * Last, the keychain entries of accounts no longer kept there (logged out, or logged in again
   * with the file) are deleted: a crash before leaves an entry nobody reads, never a session
   * without its tokens.
   */
  private async commit(before: StoredAccounts, others: SessionFile[], active?: { session?: SessionFile }): Promise<void> {
    if (active) {
      await this.file.write(distinct([...others, ...before.others]));
      if (active.session) await this.store.write(active.session);
      else await this.store.remove();
    }
    await this.file.write(distinct(others));
    const activeAfter = active ? active.session : activeOf(before);
    const after = [...others, ...(activeAfter ? [activeAfter] : [])];
    const stillInKeychain = (account: SessionFile) => after.some((kept) => inKeychain(kept) && sameAccount(kept, account));
    for (const gone of allOf(before).filter((account) => inKeychain(account) && !stillInKeychain(account))) await this.store.forgetSecretsOf(gone);
  }
}
