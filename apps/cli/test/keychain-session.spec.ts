/**
 * Sessions kept in the OS keychain (session/kept-secrets.ts, issue 48 item 3), against a
 * keychain in memory: the files never hold the tokens, every write puts them back in the
 * keychain, and what ends a session (logout, a login with the file instead) deletes its entry.
 * The real keychain is tested end to end in e2e/cli-keychain.spec.ts.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionFile } from '@prospect/contract';
import { chooseCredentialStore } from '../src/commands/credential-store-choice.js';
import { Accounts } from '../src/session/accounts.js';
import { keptIn } from '../src/session/kept-secrets.js';
import { type Keychain, KeychainError, keychainReason, keychainService } from '../src/session/keychain.js';
import { SessionStore } from '../src/session/session-store.js';

/** A keychain in memory, by `service/account`; `failing` makes every call fail as an unreachable one does. */
class MemoryKeychain implements Keychain {
  entries = new Map<string, string>();
  failing: string | undefined;
  async get(service: string, account: string) {
    this.check();
    return this.entries.get(`${service}/${account}`) ?? null;
  }
  async set(service: string, account: string, secret: string) {
    this.check();
    this.entries.set(`${service}/${account}`, secret);
  }
  async delete(service: string, account: string) {
    this.check();
    return this.entries.delete(`${service}/${account}`);
  }
  private check() {
    if (this.failing) throw new KeychainError(this.failing);
  }
}

const account = (apiBaseUrl: string, id: string, token: string): SessionFile => ({
  accessToken: `prs_${token}`,
  refreshToken: `prsr_${token}`,
  apiBaseUrl,
  user: { id, email: `${id}@example.com`, name: id },
  expiresAt: '2030-01-01T00:00:00.000Z',
  createdAt: '2026-01-01T00:00:00.000Z',
});
const adaA = keptIn(account('http://a.example', 'ada', 'ada-a'), 'keychain');
const graceA = keptIn(account('http://a.example', 'grace', 'grace-a'), 'keychain');

let dir: string;
let keychain: MemoryKeychain;
let warnings: string[];
let store: SessionStore;
let accounts: Accounts;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prospect-keychain-'));
  keychain = new MemoryKeychain();
  warnings = [];
  store = new SessionStore(dir, (line) => warnings.push(line), keychain);
  accounts = new Accounts(store);
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/** Every file of the directory, as text. */
const files = async () => (await Promise.all((await readdir(dir)).map((name) => readFile(join(dir, name), 'utf8')))).join('\n');

it('writes the tokens to the keychain and the rest to the file, and reads the session back whole', async () => {
  await store.write(adaA);
  expect(JSON.parse(await readFile(store.path, 'utf8'))).toEqual({ apiBaseUrl: 'http://a.example', user: adaA.user, expiresAt: adaA.expiresAt, createdAt: adaA.createdAt, credentialStore: 'keychain' });
  expect(JSON.parse(keychain.entries.get('prospect:a.example/ada')!)).toEqual({ accessToken: 'prs_ada-a', refreshToken: 'prsr_ada-a' });
  expect(await store.read()).toEqual({ kind: 'session', session: adaA });
});

it('keeps a session of the file in the file, and never touches the keychain for it', async () => {
  keychain.failing = 'unreachable';
  const plain = account('http://a.example', 'ada', 'plain');
  await store.write(plain);
  expect(JSON.parse(await readFile(store.path, 'utf8'))).toEqual(plain);
  expect(await store.read()).toEqual({ kind: 'session', session: plain });
});

it('a refresh (a new pair of the same session) goes to the keychain again, not to the file', async () => {
  await store.write(adaA);
  const read = await store.read();
  if (read.kind !== 'session') throw new Error('no session');
  await store.write({ ...read.session, accessToken: 'prs_renewed', refreshToken: 'prsr_renewed' });
  expect(await files()).not.toContain('renewed');
  expect(await store.read()).toMatchObject({ session: { accessToken: 'prs_renewed', refreshToken: 'prsr_renewed', credentialStore: 'keychain' } });
});

it('a keychain that cannot be used: a write throws before the file changes; a read throws rather than calling the session invalid', async () => {
  await store.write(adaA);
  const before = await readFile(store.path, 'utf8');
  keychain.failing = 'it is locked';
  await expect(store.write({ ...adaA, accessToken: 'prs_new' })).rejects.toThrow(KeychainError);
  expect(await readFile(store.path, 'utf8')).toBe(before);
  await expect(store.read()).rejects.toThrow(`The tokens of the session in ${store.path} are in the OS keychain, which cannot be used: it is locked.`);
  // Nothing that reads the accounts may then drop one: a change stops instead.
  await expect(accounts.logIn(graceA)).rejects.toThrow(KeychainError);
  expect(await readFile(store.path, 'utf8')).toBe(before);
});

it('an entry gone from the keychain (deleted by hand) is an invalid session, saying so', async () => {
  await store.write(adaA);
  keychain.entries.clear();
  expect(await store.read()).toEqual({ kind: 'invalid', reason: `the tokens of ${store.path} are no longer in the OS keychain (service prospect:a.example, account ada)` });
});

it('switching accounts moves them between the files without their tokens; logging out deletes the entry', async () => {
  await accounts.logIn(adaA);
  await accounts.logIn(graceA);
  expect(await files()).not.toMatch(/prs_|prsr_/);
  expect([...keychain.entries.keys()].sort()).toEqual(['prospect:a.example/ada', 'prospect:a.example/grace']);
  await accounts.switchTo(adaA);
  expect((await accounts.read()).others).toEqual([graceA]);

  await accounts.logOut(graceA, async () => undefined);
  expect([...keychain.entries.keys()]).toEqual(['prospect:a.example/ada']);
  await accounts.logOut(undefined, async () => undefined);
  expect(keychain.entries.size).toBe(0);
  expect(await readdir(dir)).toEqual([]);
});

it('a new login of the account with the file instead deletes its keychain entry', async () => {
  await accounts.logIn(adaA);
  await accounts.logIn(keptIn(account('http://a.example', 'ada', 'again'), 'file'));
  expect(keychain.entries.size).toBe(0);
  expect(await store.read()).toMatchObject({ session: { accessToken: 'prs_again' } });
});

it('removing the session file (a refresh token the server refused) deletes its entry; when it cannot, says what is left', async () => {
  await store.write(adaA);
  keychain.failing = 'it is locked';
  await store.remove();
  expect(warnings).toEqual(['Warning: could not delete the tokens from the OS keychain (it is locked); delete its entry prospect:a.example / ada yourself.']);
  keychain.failing = undefined;
  await store.write(adaA);
  await store.remove();
  expect(keychain.entries.size).toBe(0);
});

describe('keychainService', () => {
  it('names a server by its host, port and path, as gh names github.com', () => {
    expect(keychainService('https://prospect.example.com')).toBe('prospect:prospect.example.com');
    expect(keychainService('http://127.0.0.1:3000/')).toBe('prospect:127.0.0.1:3000');
    expect(keychainService('https://example.com/prospect/')).toBe('prospect:example.com/prospect');
  });
});

describe('keychainReason', () => {
  it('says the platform errors in words, and any other by its first line', () => {
    const dbus = Object.assign(new Error('Platform failure: DBus error: Using X11 for dbus-daemon autolaunch was disabled at compile time, set your DBUS_SESSION_BUS_ADDRESS instead'), {
      cause: new Error('Using X11 for dbus-daemon autolaunch was disabled'),
    });
    expect(keychainReason(dbus)).toBe('no Secret Service runs here (no D-Bus session bus)');
    expect(keychainReason(new Error("Couldn't access platform storage: Secret Service: unlock prompt was dismissed"))).toBe('it is locked, and no prompt to unlock it could be shown');
    expect(keychainReason(new Error("Couldn't access platform storage: Secret Service: no result found"))).toBe('the Secret Service has no default keyring to keep the tokens in');
    expect(keychainReason(new Error('Something else\nwith details'))).toBe('Something else');
  });
});

describe('chooseCredentialStore', () => {
  const choose = (flags: Record<string, unknown>, env: Record<string, string>, existing?: SessionFile) => chooseCredentialStore({ flags, env }, existing);
  it('--secure-storage or --no-secure-storage, then PROSPECT_CREDENTIAL_STORE, then where the account was, then the file', () => {
    expect(choose({}, {})).toBe('file');
    expect(choose({ secureStorage: true }, {})).toBe('keychain');
    expect(choose({}, { PROSPECT_CREDENTIAL_STORE: 'keychain' })).toBe('keychain');
    expect(choose({}, { PROSPECT_CREDENTIAL_STORE: ' Keychain ' })).toBe('keychain');
    expect(choose({ secureStorage: false }, { PROSPECT_CREDENTIAL_STORE: 'keychain' })).toBe('file');
    expect(choose({}, {}, adaA)).toBe('keychain');
    expect(choose({}, { PROSPECT_CREDENTIAL_STORE: 'file' }, adaA)).toBe('file');
    expect(() => choose({}, { PROSPECT_CREDENTIAL_STORE: 'vault' })).toThrow('PROSPECT_CREDENTIAL_STORE must be keychain or file, not "vault".');
  });
});
