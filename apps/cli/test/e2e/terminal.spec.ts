/**
 * `prospect auth:login` in a real terminal (tmux), against the real API: what
 * a person sees. tmux is installed by .ci/run; without it this test fails
 * saying so, rather than passing silently.
 */
import { assertBuilt, makeSandbox, PROSPECT_JS, type Sandbox } from '../support/run-cli.js';
import { approve, authorizedPoll, cliToken, createUser, startRealApi, type TestApp } from '../support/real-api.js';
import { Tmux } from '../support/tmux.js';

let terminal: Tmux;
const tmux = (...args: string[]) => terminal.run(...args);
const screen = (session = 'login') => terminal.screen(session);
const waitForScreen = (pattern: RegExp, session = 'login', timeoutMs = 20_000) => terminal.waitForScreen(pattern, session, timeoutMs);

let api: TestApp;
let box: Sandbox;
beforeAll(async () => {
  terminal = new Tmux();
  assertBuilt();
  api = await startRealApi();
  box = await makeSandbox();
});
afterAll(async () => {
  terminal?.kill();
  await box?.cleanup();
  await api?.close();
});

it('shows the link, code and QR code at once, a spinner with the time left, then "Logged in as" after approval', async () => {
  const person = await createUser(api, { name: 'Ada Lovelace', email: `ada-${Date.now()}@example.com` });
  // A terminal of 100×30 with no desktop: a person at a console. CI is unset inside, as at a real terminal.
  const command = `env -u CI -u DISPLAY -u WAYLAND_DISPLAY PROSPECT_CONFIG_DIR='${box.configDir}' '${process.execPath}' '${PROSPECT_JS}' auth:login --api-url ${api.baseUrl}; echo "exit=$?"; sleep 60`;
  tmux('new-session', '-d', '-s', 'login', '-x', '100', '-y', '30', command);

  const [first, userCode] = await waitForScreen(/│\s+([A-Z]{4}-[A-Z]{4})\s+│[^]*Waiting for approval/);
  expect(first).toContain(`${api.baseUrl}/device?user_code=${userCode}`);
  expect(first).toContain(`You are signing in to ${new URL(api.baseUrl).host}`);
  expect(first).toContain('Or scan it with your phone:');
  expect(first).toContain('Not opening a browser (no desktop to open a browser on).');
  expect(first).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Waiting for approval in the browser… \d+:\d\d left/);

  await approve(api, userCode!, person);

  const [last] = await waitForScreen(/exit=0/);
  if (process.env.SHOW_SCREENS) console.log(`${first}\n${'─'.repeat(100)}\n${last}`);
  expect(last).toContain(`✓ Logged in as Ada Lovelace <${person.email}>`);
  // The link and the code are still there at the end, a record of what was approved; the QR code, which only served the wait, is gone.
  expect(last).toContain(userCode);
  expect(last).toContain(`${api.baseUrl}/device?user_code=${userCode}`);
  expect(last).not.toContain('Or scan it with your phone:');
  expect(last).not.toMatch(/[▀▄█]{6}/);
  // Where the session went, in lines short enough not to wrap mid-word.
  expect(last).toMatch(/\n {1}Session saved to \S+auth-session\.json\.\n {1}The access token lasts 60 minutes and is renewed automatically\.\n/);
  expect((await box.readSession()).user.email).toBe(person.email);
});

describe('auth:login --token - at a terminal', () => {
  /** Starts `prospect auth:login --token -` in its own tmux window, as a person would type it. */
  function startTokenLogin(session: string, sandbox: Sandbox) {
    const command = `env -u CI PROSPECT_CONFIG_DIR='${sandbox.configDir}' '${process.execPath}' '${PROSPECT_JS}' auth:login --api-url ${api.baseUrl} --token -; echo "exit=$?"; sleep 60`;
    tmux('new-session', '-d', '-s', session, '-x', '100', '-y', '30', command);
    return waitForScreen(/Paste your token \(it will not be shown\) and press Enter:/, session);
  }

  it('never shows the pasted token, lets the person correct a typo, and logs in', async () => {
    const person = await createUser(api, { name: 'Grace Hopper', email: `grace-${Date.now()}@example.com` });
    const token = await cliToken(api, person);
    const sandbox = await makeSandbox();
    try {
      await startTokenLogin('token', sandbox);
      tmux('send-keys', '-t', 'token', '-l', 'oops');
      tmux('send-keys', '-t', 'token', 'BSpace', 'BSpace', 'BSpace', 'BSpace');
      tmux('send-keys', '-t', 'token', '-l', token);
      tmux('send-keys', '-t', 'token', 'Enter');

      const [last] = await waitForScreen(/exit=0/, 'token');
      expect(last).toContain(`Logged in as Grace Hopper <${person.email}>`);
      expect(last).not.toContain('oops');
      expect(last).not.toContain(token.slice(0, 10));
      expect((await sandbox.readSession()).accessToken).toBe(token);
    } finally {
      await sandbox.cleanup();
    }
  });

  it('cancels on Ctrl-C: exit 130, nothing saved, the terminal echoes again', async () => {
    const sandbox = await makeSandbox();
    try {
      await startTokenLogin('cancel', sandbox);
      tmux('send-keys', '-t', 'cancel', '-l', 'prs_half');
      tmux('send-keys', '-t', 'cancel', 'C-c');

      const [last] = await waitForScreen(/exit=130/, 'cancel');
      expect(last).toContain('Cancelled. Nothing was saved.');
      expect(last).not.toContain('prs_half');
      expect(sandbox.hasSession()).toBe(false);
      // Raw mode was undone: what is typed now shows up, as at any prompt.
      tmux('send-keys', '-t', 'cancel', '-l', 'echo-is-back');
      await waitForScreen(/echo-is-back/, 'cancel');
    } finally {
      await sandbox.cleanup();
    }
  });
});

it('prospect api at a terminal: renews an expired session first, then indented JSON; into a pipe, one line', async () => {
  const person = await createUser(api, { name: 'Ada Lovelace', email: `ada-api-${Date.now()}@example.com` });
  const { body } = await authorizedPoll(api, person);
  const sandbox = await makeSandbox();
  try {
    await sandbox.writeSession({
      accessToken: body.accessToken,
      refreshToken: body.refreshToken,
      apiBaseUrl: api.baseUrl,
      user: body.user,
      expiresAt: new Date(Date.now() - 1000).toISOString(),
      createdAt: new Date().toISOString(),
    });
    const prospect = `env -u CI PROSPECT_CONFIG_DIR='${sandbox.configDir}' '${process.execPath}' '${PROSPECT_JS}'`;
    tmux('new-session', '-d', '-s', 'api', '-x', '120', '-y', '40', `${prospect} api /api/cli/auth/me; ${prospect} api /api/cli/auth/me | cat; echo "exit=$?"; sleep 60`);
    const [shown] = await waitForScreen(/exit=0/, 'api');
    expect(shown).toMatch(/^\{\n {2}"user": \{\n {4}"id": /m);
    expect(shown).toMatch(/^\{"user":\{"id":"[^"]+","email":"ada-api-/m);
    expect((await sandbox.readSession()).accessToken).not.toBe(body.accessToken);
  } finally {
    await sandbox.cleanup();
  }
});


it('auth:login --web at a terminal with no desktop: the link to open, then "Logged in as" once the browser came back', async () => {
  const { signInAs } = await import('../../../api/test/support/web-client.js');
  const person = await createUser(api, { name: 'Ada Lovelace', email: `ada-web-${Date.now()}@example.com` });
  const sandbox = await makeSandbox();
  try {
    // Wide enough that the link is one line of the screen.
    const command = `env -u CI -u DISPLAY -u WAYLAND_DISPLAY PROSPECT_CONFIG_DIR='${sandbox.configDir}' '${process.execPath}' '${PROSPECT_JS}' auth:login --web --api-url ${api.baseUrl}; echo "exit=$?"; sleep 60`;
    tmux('new-session', '-d', '-s', 'web', '-x', '400', '-y', '30', command);
    const [, link] = await waitForScreen(/^ {2}(http\S+)\n[^]*Waiting for the browser/m, 'web');
    const web = await signInAs(api, person.email, 'correct horse battery');
    const authorized = await web.send('GET', new URL(link!).pathname + new URL(link!).search, undefined, { 'sec-fetch-site': 'none' });
    expect((await fetch(authorized.location!)).status).toBe(200);
    const [last] = await waitForScreen(/exit=0/, 'web');
    expect(last).toContain(`Logged in as Ada Lovelace <${person.email}> on ${api.baseUrl}.`);
    expect(last).toMatch(/\nSession saved to \S+auth-session\.json\.\nThe access token lasts 60 minutes and is renewed automatically\.\n/);
  } finally {
    await sandbox.cleanup();
  }
});
