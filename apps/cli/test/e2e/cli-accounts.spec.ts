/**
 * Several accounts and servers, as gh keeps them (issue #36, item 2): the built binary against
 * the real API, reached under two names (127.0.0.1 and localhost), which the CLI holds for two
 * servers. auth:login keeps the accounts it does not replace, auth:switch and auth:logout name
 * one by --host and --user (or ask at a terminal, tried in tmux), auth:status lists
 * them, and auth-session.json is at every step exactly the active session, as the contract says.
 */
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ROUTES } from '@prospect/contract';
import { api, box, person, useRealApi } from '../support/e2e-suite.js';
import { authorizedPoll, cliToken, createUser } from '../support/real-api.js';
import { type CliRun, PROSPECT_JS, validSession } from '../support/run-cli.js';
import { Tmux } from '../support/tmux.js';

useRealApi('accounts');

let ada: Awaited<ReturnType<typeof createUser>>;
/** The same API under another name: another server, to the CLI. */
let hostA: string;
let hostB: string;
beforeAll(async () => {
  ada = await createUser(api, { name: 'Ada Lovelace', email: `ada-accounts-${Date.now()}@example.com` });
  hostA = api.baseUrl;
  hostB = api.baseUrl.replace('127.0.0.1', 'localhost');
  expect(hostB).not.toBe(hostA);
});

const meStatus = async (token: string) => (await fetch(api.baseUrl + ROUTES.me, { headers: { authorization: `Bearer ${token}` } })).status;
const login = (host: string, token: string) => box.run(['auth:login', '--api-url', host, '--token', token]);
const accountsPath = () => join(box.configDir, 'auth-accounts.json');
const storedAccounts = async (): Promise<Array<{ apiBaseUrl: string; accessToken: string; user: { email: string } }>> =>
  existsSync(accountsPath()) ? JSON.parse(await readFile(accountsPath(), 'utf8')).accounts : [];
const modeOf = async (path: string) => ((await stat(path)).mode & 0o777).toString(8);
/** The command a one-line error offers, between its first backquotes, as words. */
const offered = (run: CliRun) => /`prospect ([^`]+)`/.exec(run.stderr)![1]!.split(' ');

/** Grace on server A, Grace on server B, then Ada on server A (active); each logged in with a pasted token. */
async function threeAccounts() {
  const tokens = { graceA: await cliToken(api, person), graceB: await cliToken(api, person), adaA: await cliToken(api, ada) };
  expect((await login(hostA, tokens.graceA)).code).toBe(0);
  expect((await login(hostB, tokens.graceB)).code).toBe(0);
  expect((await login(hostA, tokens.adaA)).code).toBe(0);
  return tokens;
}

describe('auth:login', () => {
  it('to a second server and as a second person keeps every account; the newest is active, and auth-session.json is exactly its session', async () => {
    const graceA = await cliToken(api, person);
    const graceB = await cliToken(api, person);
    const adaA = await cliToken(api, ada);
    expect((await login(hostA, graceA)).code).toBe(0);
    const second = await login(hostB, graceB);
    expect(second.code).toBe(0);
    expect(second.stderr).toContain(`Kept the session of Grace Hopper <${person.email}> on ${hostA}: switch back with \`prospect auth:switch --host ${hostA} --user ${person.email}\`.`);
    const third = await login(hostA, adaA);
    expect(third.stderr).toContain(`Kept the session of Grace Hopper <${person.email}> on ${hostB}`);
    expect(third.stderr).not.toContain('Replaced');

    const session = await box.readSession();
    expect(Object.keys(session).sort()).toEqual(['accessToken', 'apiBaseUrl', 'createdAt', 'expiresAt', 'user']);
    expect(session).toMatchObject({ accessToken: adaA, apiBaseUrl: hostA, user: { email: ada.email } });
    expect(await modeOf(box.sessionPath)).toBe('600');
    expect(await modeOf(accountsPath())).toBe('600');
    expect((await storedAccounts()).map((a) => [a.apiBaseUrl, a.user.email, a.accessToken])).toEqual([
      [hostB, person.email, graceB],
      [hostA, person.email, graceA],
    ]);
    expect((await box.run(['auth:whoami'])).stdout).toContain(`Logged in to ${hostA} as Ada Lovelace <${ada.email}>`);
    // Kept, not signed out: every token still works.
    for (const token of [graceA, graceB, adaA]) expect(await meStatus(token)).toBe(200);
  });

  it('as the same person on the same server replaces that account’s session, stored or active, and ends it on the server', async () => {
    const { graceA } = await threeAccounts();
    const again = await cliToken(api, person);
    const run = await login(hostA, again);
    expect(run.stderr).toContain(`Replaced the session of Grace Hopper <${person.email}> on ${hostA} (signed out on the server).`);
    expect(await meStatus(graceA)).toBe(401);
    expect(run.stderr).toContain(`Kept the session of Ada Lovelace <${ada.email}> on ${hostA}`);
    expect((await box.readSession()).accessToken).toBe(again);
    const stored = await storedAccounts();
    expect(stored.map((a) => a.user.email).sort()).toEqual([ada.email, person.email].sort());
    expect(stored.map((a) => a.accessToken)).not.toContain(graceA);
  });
});

describe('auth:status', () => {
  it('lists every account, the active one marked, with its expiry; --json too', async () => {
    await threeAccounts();
    const run = await box.run(['auth:status']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`User:         Ada Lovelace <${ada.email}>\n`);
    expect(run.stdout).toContain('Accounts (* active; `prospect auth:switch` changes it):\n');
    expect(run.stdout).toMatch(new RegExp(`^  \\* Ada Lovelace <${ada.email}> on ${hostA}: expires \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC$`, 'm'));
    expect(run.stdout).toMatch(new RegExp(`^    Grace Hopper <${person.email}> on ${hostB}: expires `, 'm'));
    expect(run.stdout).toMatch(new RegExp(`^    Grace Hopper <${person.email}> on ${hostA}: expires `, 'm'));

    const json = JSON.parse((await box.run(['auth:status', '--json'])).stdout);
    expect(json.accounts.map((a: { server: string; user: { email: string }; active: boolean; expired: boolean }) => [a.server, a.user.email, a.active, a.expired])).toEqual([
      [hostA, ada.email, true, false],
      [hostB, person.email, false, false],
      [hostA, person.email, false, false],
    ]);
  });
});

describe('auth:switch', () => {
  it('by --host and --user makes that account the active session, exactly as it was stored', async () => {
    const tokens = await threeAccounts();
    const toB = await box.run(['auth:switch', '--host', hostB]);
    expect(toB).toMatchObject({ code: 0, stdout: `Switched to Grace Hopper <${person.email}> on ${hostB}.\n`, stderr: '' });
    expect(await box.readSession()).toMatchObject({ accessToken: tokens.graceB, apiBaseUrl: hostB });
    expect((await box.run(['auth:whoami'])).stdout).toContain(`Logged in to ${hostB} as Grace Hopper`);
    // The account left is kept first among the others.
    expect((await storedAccounts()).map((a) => [a.apiBaseUrl, a.user.email])).toEqual([
      [hostA, ada.email],
      [hostA, person.email],
    ]);

    // A host without its scheme is its host and port; the user's address in any case, or its part before the @.
    const byName = await box.run(['auth:switch', '--host', new URL(hostA).host, '--user', ada.email.toUpperCase()]);
    expect(byName.stdout).toBe(`Switched to Ada Lovelace <${ada.email}> on ${hostA}.\n`);
    const byLocalPart = await box.run(['auth:switch', '--host', hostA, '--user', person.email.split('@')[0]!]);
    expect((await box.readSession()).accessToken).toBe(tokens.graceA);
    expect(byLocalPart.code).toBe(0);

    const already = await box.run(['auth:switch', '--host', hostA, '--user', person.email]);
    expect(already).toMatchObject({ code: 0, stdout: `Grace Hopper <${person.email}> on ${hostA} is already the active account.\n` });
  });

  it('without a terminal and with several to choose from: one line saying which flags to pass, whose command runs', async () => {
    const tokens = await threeAccounts();
    const before = await readFile(box.sessionPath, 'utf8');
    const ambiguous = await box.run(['auth:switch']);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toMatch(/^Error: 3 accounts are stored: say which with --host and --user, e\.g\. `prospect auth:switch --host \S+ --user \S+` \(`prospect auth:status` lists them\)\.\n$/);
    expect(await readFile(box.sessionPath, 'utf8')).toBe(before);
    expect((await box.run(offered(ambiguous))).code).toBe(0);

    // Two on one server: only --user is missing.
    await box.run(['auth:switch', '--host', hostB]);
    const onA = await box.run(['auth:switch', '--host', hostA]);
    expect(onA.code).toBe(1);
    expect(onA.stderr).toMatch(/^Error: 2 stored accounts match: say which with --user, e\.g\. `prospect auth:switch --user \S+@example\.com` \(`prospect auth:status` lists them\)\.\n$/);
    const hinted = await box.run([...offered(onA), '--host', hostA]);
    expect(hinted.code).toBe(0);
    expect([tokens.graceA, tokens.adaA]).toContain((await box.readSession()).accessToken);

    const none = await box.run(['auth:switch', '--user', 'nobody@example.com']);
    expect(none).toMatchObject({ code: 1, stderr: 'Error: No stored account matches --user nobody@example.com.\nSee the stored accounts with `prospect auth:status`.\n' });
  });

  it('with one account says it is already active; with two, switches to the other and back', async () => {
    const graceA = await cliToken(api, person);
    await login(hostA, graceA);
    expect(await box.run(['auth:switch'])).toMatchObject({ code: 0, stdout: `Grace Hopper <${person.email}> on ${hostA} is already the active account, the only one stored.\n` });
    const adaB = await cliToken(api, ada);
    await login(hostB, adaB);
    expect((await box.run(['auth:switch'])).stdout).toBe(`Switched to Grace Hopper <${person.email}> on ${hostA}.\n`);
    expect((await box.readSession()).accessToken).toBe(graceA);
    expect((await box.run(['auth:switch'])).stdout).toBe(`Switched to Ada Lovelace <${ada.email}> on ${hostB}.\n`);
    expect((await box.readSession()).accessToken).toBe(adaB);
  });

  it('the guard points to auth:switch when an account of the server asked for is stored', async () => {
    await threeAccounts();
    const run = await box.run(['api', ROUTES.me, '--api-url', hostB]);
    expect(run).toMatchObject({ code: 4, stderr: `Error: Your session is for ${hostA}, not ${hostB} — run \`prospect auth:switch --host ${hostB}\`.\n` });
  });

  it('a refreshed active session is what is stored when switching away: switching back uses the renewed pair', async () => {
    const { body } = await authorizedPoll(api, person);
    // Expired by this machine's clock and the server's: the next command renews it.
    await box.writeSession(validSession(hostA, { accessToken: body.accessToken, refreshToken: body.refreshToken, user: body.user, expiresAt: new Date(Date.now() - 1000).toISOString() }));
    expect((await login(hostB, await cliToken(api, ada))).code).toBe(0);
    expect((await box.run(['auth:switch', '--host', hostA])).code).toBe(0);
    expect((await box.run(['api', ROUTES.me])).code).toBe(0);
    const renewed = await box.readSession();
    expect(renewed.refreshToken).not.toBe(body.refreshToken);

    expect(await box.run(['auth:switch', '--host', hostB])).toMatchObject({ code: 0, stderr: '' });
    expect((await storedAccounts()).find((a) => a.apiBaseUrl === hostA)).toEqual(renewed);
    expect((await box.run(['auth:switch', '--host', hostA])).code).toBe(0);
    expect(await box.readSession()).toEqual(renewed);
    expect(await meStatus(renewed.accessToken)).toBe(200);
    expect((await box.run(['auth:whoami', '--verify'])).code).toBe(0);
  });
});

describe('auth:logout', () => {
  it('without a terminal and with several accounts: one line saying which flags to pass, and nothing is logged out', async () => {
    await threeAccounts();
    const [session, accounts] = await Promise.all([readFile(box.sessionPath, 'utf8'), readFile(accountsPath(), 'utf8')]);
    const run = await box.run(['auth:logout']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^Error: 3 accounts are stored: say which with --host and --user, e\.g\. `prospect auth:logout --host \S+ --user \S+` \(`prospect auth:status` lists them\)\.\n$/);
    expect(await readFile(box.sessionPath, 'utf8')).toBe(session);
    expect(await readFile(accountsPath(), 'utf8')).toBe(accounts);
  });

  it('by --host and --user: a stored account is revoked and forgotten; the active one makes another active and says which; the last leaves none', async () => {
    const { body } = await authorizedPoll(api, person);
    await box.writeSession(validSession(hostA, { accessToken: body.accessToken, refreshToken: body.refreshToken, user: body.user, expiresAt: body.expiresAt }));
    const adaB = await cliToken(api, ada);
    await login(hostB, adaB);

    const stored = await box.run(['auth:logout', '--host', hostA, '--user', person.email]);
    expect(stored).toMatchObject({ code: 0, stdout: `Logged out of Grace Hopper <${person.email}> on ${hostA} and revoked the token on the server.\n` });
    expect(await meStatus(body.accessToken)).toBe(401);
    expect((await box.readSession()).accessToken).toBe(adaB);
    expect(existsSync(accountsPath())).toBe(false);

    const graceA = await cliToken(api, person);
    await login(hostA, graceA);
    const active = await box.run(['auth:logout', '--user', person.email]);
    expect(active.stdout).toBe(
      `Logged out of Grace Hopper <${person.email}> on ${hostA}. The token you pasted was only forgotten here and still works wherever else it is used:\n` +
        `revoke it at ${hostA}/settings/tokens, or log in with it again and run \`prospect auth:logout --revoke\`.\n` +
        `Now active: Ada Lovelace <${ada.email}> on ${hostB} (\`prospect auth:switch\` changes it).\n`,
    );
    expect((await box.readSession()).accessToken).toBe(adaB);

    const last = await box.run(['auth:logout']);
    expect(last.stdout).toMatch(new RegExp(`^Logged out of ${hostB}\\. The token you pasted`));
    expect(box.hasSession()).toBe(false);
    expect(existsSync(accountsPath())).toBe(false);
    expect(await box.run(['auth:status'])).toMatchObject({ code: 4 });
  });

  it('no stored account matches: says so, exit 1, nothing logged out', async () => {
    await threeAccounts();
    const run = await box.run(['auth:logout', '--host', 'http://127.0.0.1:9']);
    expect(run).toMatchObject({ code: 1, stderr: 'Error: No stored account matches --host http://127.0.0.1:9; nothing was logged out.\nSee the stored accounts with `prospect auth:status`.\n' });
    expect((await storedAccounts()).length).toBe(2);
  });
});

describe('at a terminal (tmux)', () => {
  let terminal: Tmux;
  beforeAll(() => (terminal = new Tmux()));
  afterAll(() => terminal?.kill());

  /** Runs `prospect …args` in a terminal of its own, as a person would type it (CI unset, as at a real terminal). */
  function start(session: string, args: string) {
    const command = `env -u CI PROSPECT_CONFIG_DIR='${box.configDir}' '${process.execPath}' '${PROSPECT_JS}' ${args}; echo "exit=$?"; sleep 60`;
    terminal.run('new-session', '-d', '-s', session, '-x', '120', '-y', '20', command);
  }

  it('auth:switch asks which account, the active one marked, and switches to the one picked with the arrows and Enter', async () => {
    const tokens = await threeAccounts();
    start('switch', 'auth:switch');
    const [asked] = await terminal.waitForScreen(/Switch to which account\?[^]*Esc to cancel/, 'switch');
    expect(asked).toContain(`Ada Lovelace <${ada.email}> on ${hostA} (active)`);
    // The cursor starts on the first account that is not active (Grace on B); one down is Grace on A.
    expect(asked).toMatch(new RegExp(`❯ Grace Hopper <${person.email}> on ${hostB}`));
    terminal.run('send-keys', '-t', 'switch', 'Down');
    await terminal.waitForScreen(new RegExp(`❯ Grace Hopper <${person.email}> on ${hostA}`), 'switch');
    terminal.run('send-keys', '-t', 'switch', 'Enter');
    const [done] = await terminal.waitForScreen(/exit=0/, 'switch');
    expect(done).toContain(`Switched to Grace Hopper <${person.email}> on ${hostA}.`);
    expect(await box.readSession()).toMatchObject({ accessToken: tokens.graceA, apiBaseUrl: hostA });
  });

  it('auth:logout asks which account; Esc cancels: exit 130, nothing logged out', async () => {
    await threeAccounts();
    const [session, accounts] = await Promise.all([readFile(box.sessionPath, 'utf8'), readFile(accountsPath(), 'utf8')]);
    start('logout', 'auth:logout');
    await terminal.waitForScreen(/Log out of which account\?/, 'logout');
    terminal.run('send-keys', '-t', 'logout', 'Escape');
    const [done] = await terminal.waitForScreen(/exit=130/, 'logout');
    expect(done).toContain('Log out of which account? Cancelled.');
    expect(await readFile(box.sessionPath, 'utf8')).toBe(session);
    expect(await readFile(accountsPath(), 'utf8')).toBe(accounts);
  });
});
