/**
 * The stored accounts (session/accounts.ts) on a real directory: auth-session.json is always
 * the active session alone, the others wait in auth-accounts.json, and neither a change that
 * stopped halfway nor a corrupt accounts file makes an account appear twice or a session vanish.
 */
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionFile } from '@prospect/contract';
import { Accounts } from '../src/session/accounts.js';
import { SessionStore } from '../src/session/session-store.js';

const account = (apiBaseUrl: string, id: string, token: string): SessionFile => ({
  accessToken: `prs_${token}`,
  apiBaseUrl,
  user: { id, email: `${id}@example.com`, name: id },
  expiresAt: '2030-01-01T00:00:00.000Z',
  createdAt: '2026-01-01T00:00:00.000Z',
});
const adaA = account('http://a.example', 'ada', 'ada-a');
const adaB = account('http://b.example', 'ada', 'ada-b');
const graceA = account('http://a.example', 'grace', 'grace-a');

let dir: string;
let store: SessionStore;
let accounts: Accounts;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'prospect-accounts-'));
  store = new SessionStore(dir);
  accounts = new Accounts(store);
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const tokens = async () => {
  const read = await accounts.read();
  return { active: read.active.kind === 'session' ? read.active.session.accessToken : read.active.kind, others: read.others.map((other) => other.accessToken) };
};

it("each account keeps its own organization: switching accounts carries it, a new login of one keeps it", async () => {
  const acme = { slug: 'acme', name: 'Acme', role: 'admin' as const };
  await accounts.logIn({ ...adaA, organization: acme });
  await accounts.logIn(graceA);
  await accounts.switchTo(adaA);
  expect((await accounts.read()).active).toMatchObject({ kind: 'session', session: { organization: acme } });
  await accounts.logIn({ ...adaA, accessToken: 'prs_ada-a-again' });
  expect(JSON.parse(await readFile(store.path, 'utf8'))).toEqual({ ...adaA, accessToken: 'prs_ada-a-again', organization: acme });
  // Grace never chose one: she has none.
  await accounts.switchTo(graceA);
  expect(JSON.parse(await readFile(store.path, 'utf8'))).toEqual(graceA);
});

it('a login keeps the other accounts, most recent first, and replaces only its own', async () => {
  await accounts.logIn(adaA);
  expect(await accounts.logIn(adaB)).toEqual({ replaced: [], kept: adaA });
  await accounts.logIn(graceA);
  expect(await tokens()).toEqual({ active: 'prs_grace-a', others: ['prs_ada-b', 'prs_ada-a'] });
  const again = { ...adaA, accessToken: 'prs_ada-a-again' };
  expect(await accounts.logIn(again)).toEqual({ replaced: [adaA], kept: graceA });
  expect(await tokens()).toEqual({ active: 'prs_ada-a-again', others: ['prs_grace-a', 'prs_ada-b'] });
  expect(JSON.parse(await readFile(store.path, 'utf8'))).toEqual(again);
  expect((await stat(accounts.path)).mode & 0o777).toBe(0o600);
});

it('a copy of the active account left in the accounts file by a change that stopped halfway is not an account, and the next change drops it', async () => {
  await accounts.logIn(adaA);
  await accounts.logIn(graceA);
  // As after a crash between the accounts file's first write and the session file's: Grace is active, and stored too (older).
  await writeFile(accounts.path, JSON.stringify({ accounts: [{ ...graceA, accessToken: 'prs_grace-old' }, adaA] }), { mode: 0o600 });
  expect(await tokens()).toEqual({ active: 'prs_grace-a', others: ['prs_ada-a'] });
  await accounts.switchTo(adaA);
  expect(await tokens()).toEqual({ active: 'prs_ada-a', others: ['prs_grace-a'] });
  expect(JSON.parse(await readFile(accounts.path, 'utf8')).accounts).toEqual([graceA]);
});

it('a corrupt accounts file, or an entry the contract refuses, holds no account; the active session is untouched', async () => {
  await accounts.logIn(adaA);
  await writeFile(accounts.path, '{"accounts": [', { mode: 0o600 });
  expect(await tokens()).toEqual({ active: 'prs_ada-a', others: [] });
  await writeFile(accounts.path, JSON.stringify({ accounts: [{ ...graceA, accessToken: '' }, adaB] }), { mode: 0o600 });
  expect(await tokens()).toEqual({ active: 'prs_ada-a', others: ['prs_ada-b'] });
});

it('logging out the active account makes one of the same server active first, then the most recent; the last leaves no file', async () => {
  await accounts.logIn(graceA);
  await accounts.logIn(adaB);
  await accounts.logIn(adaA);
  const ended: string[] = [];
  const end = async (session: SessionFile) => void ended.push(session.accessToken);
  expect((await accounts.logOut(adaA, end)).nowActive).toEqual(graceA);
  expect((await accounts.logOut(undefined, end)).nowActive).toEqual(adaB);
  expect(await accounts.logOut(undefined, end)).toMatchObject({ wasActive: true, nowActive: undefined });
  expect(ended).toEqual(['prs_ada-a', 'prs_grace-a', 'prs_ada-b']);
  expect(await tokens()).toEqual({ active: 'none', others: [] });
  await expect(stat(accounts.path)).rejects.toMatchObject({ code: 'ENOENT' });
});

it('two logins at once, as two processes would, both keep what the other wrote (the session lock)', async () => {
  await accounts.logIn(adaA);
  await Promise.all([new Accounts(new SessionStore(dir)).logIn(adaB), new Accounts(new SessionStore(dir)).logIn(graceA)]);
  const { active, others } = await tokens();
  expect([active, ...others].sort()).toEqual(['prs_ada-a', 'prs_ada-b', 'prs_grace-a']);
});

describe("a service account's session (issue #45: a CI token exchanged)", () => {
  const robot = {
    ...account('http://a.example', 'robot-id', 'robot'),
    user: { id: 'robot-id', email: '', name: 'nightly sync' },
    serviceAccount: { clientId: 'psa_robot', organization: { id: 'o1', slug: 'acme', name: 'Acme' } },
  };

  it('is written in its own form (no address, what it is) and read back whole', async () => {
    await accounts.logIn(robot);
    expect(JSON.parse(await readFile(store.path, 'utf8'))).toEqual({
      accessToken: 'prs_robot',
      apiBaseUrl: 'http://a.example',
      user: { id: 'robot-id', email: null, name: 'nightly sync' },
      expiresAt: robot.expiresAt,
      createdAt: robot.createdAt,
      serviceAccount: robot.serviceAccount,
    });
    expect(await store.read()).toEqual({ kind: 'session', session: robot });
  });

  it("a refresh token or a person's organization in its file makes it no session", async () => {
    const file = { ...robot, user: { ...robot.user, email: null } };
    await store.writeAtomically(store.path, JSON.stringify({ ...file, refreshToken: 'prr_x' }));
    expect(await store.read()).toMatchObject({ kind: 'invalid' });
    await store.writeAtomically(store.path, JSON.stringify({ ...file, organization: { slug: 'acme', name: 'Acme', role: 'owner' } }));
    expect(await store.read()).toMatchObject({ kind: 'invalid' });
    await store.writeAtomically(store.path, JSON.stringify(file));
    expect(await store.read()).toMatchObject({ kind: 'session' });
  });

  it("keeps the person's session active before it for a switch back, but is never kept itself", async () => {
    await accounts.logIn(adaA);
    expect(await accounts.logIn(robot)).toEqual({ replaced: [], kept: adaA });
    expect(await tokens()).toEqual({ active: 'prs_robot', others: ['prs_ada-a'] });
    // A person logging in replaces it: an hour's token that cannot be renewed is not an account to go back to.
    expect(await accounts.logIn(graceA)).toEqual({ replaced: [robot], kept: undefined });
    expect(await tokens()).toEqual({ active: 'prs_grace-a', others: ['prs_ada-a'] });
  });
});
