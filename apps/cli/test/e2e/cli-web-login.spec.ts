/**
 * `prospect auth:login --web` (issue #48) end to end: the built binary, the real API (with device
 * login turned off, DEVICE_LOGIN_ENABLED=false, so the browser is the way in), and a browser played
 * by the API's own test client (signed in with its cookies), which follows the authorization
 * endpoint's redirect back to the CLI's loopback listener as a browser would.
 */
import type { ChildProcess } from 'node:child_process';
import { waitFor } from '../../../api/test/support/eventually.js';
import { signInAs } from '../../../api/test/support/web-client.js';
import { startTestApp, type TestApp } from '../../../api/test/support/test-app.js';
import { createUser } from '../support/real-api.js';
import type { CliRun } from '../support/run-cli.js';
import { box, useSandbox } from '../support/e2e-suite.js';

useSandbox();

let api: TestApp;
let person: Awaited<ReturnType<typeof createUser>>;
beforeAll(async () => {
  api = await startTestApp({ env: { DEVICE_LOGIN_ENABLED: 'false' } });
  person = await createUser(api, { name: 'Grace Hopper', email: `grace-web-${Date.now()}@example.com` });
});
afterAll(() => api?.close());

/** `prospect auth:login --web …` started; resolves once it printed the link, with the link and its end. */
async function startWebLogin(args: string[] = [], env: Record<string, string> = {}) {
  let output = () => '';
  let child!: ChildProcess;
  const ended: Promise<CliRun> = box.run(['auth:login', '--web', '--api-url', api.baseUrl, ...args], {
    env,
    onStarted: (started, read) => ([child, output] = [started, read]),
  });
  let finished = false;
  void ended.then(() => (finished = true));
  await waitFor('the CLI to print the link', () => finished || /Waiting for the browser/.test(output()));
  const link = /^ {2}(http\S+)$/m.exec(output())?.[1];
  return { link: link ? new URL(link) : undefined, ended, child, output };
}

/** The browser: a signed-in person opens the link; the authorization endpoint's answer (a redirect back to the CLI). */
async function openInSignedInBrowser(link: URL): Promise<URL> {
  const web = await signInAs(api, person.email, 'correct horse battery');
  const answer = await web.send('GET', link.pathname + link.search, undefined, { 'sec-fetch-site': 'none' });
  expect(answer.status).toBe(303);
  return new URL(answer.location!);
}

describe('auth:login --web', () => {
  it('signs in through the browser: PKCE, a loopback port, no consent page, then a session with a refresh token', async () => {
    const login = await startWebLogin();
    expect(login.link!.origin + login.link!.pathname).toBe(`${api.baseUrl}/oauth/authorize`);
    const params = login.link!.searchParams;
    expect(Object.fromEntries(params)).toMatchObject({ response_type: 'code', client_id: 'prospect-cli', scope: 'profile tokens orgs', code_challenge_method: 'S256' });
    expect(params.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(params.get('state')).toMatch(/^[\w-]{43}$/);

    const back = await openInSignedInBrowser(login.link!);
    expect(back.origin + back.pathname).toBe(params.get('redirect_uri'));
    const tab = await fetch(back);
    expect(tab.status).toBe(200);
    expect(await tab.text()).toContain('You can close this tab');

    const run = await login.ended;
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`Logged in as Grace Hopper <${person.email}> on ${api.baseUrl}.\n`);
    const session = await box.readSession();
    expect(session).toMatchObject({ apiBaseUrl: api.baseUrl, user: { id: person.id, email: person.email }, accessToken: expect.stringMatching(/^prs_/), refreshToken: expect.stringMatching(/^prsr_/) });
    expect((await box.run(['auth:whoami', '--verify'])).code).toBe(0);
  });

  it('takes one answer: a second one finds nothing listening', async () => {
    const login = await startWebLogin();
    const back = await openInSignedInBrowser(login.link!);
    expect((await fetch(back)).status).toBe(200);
    await expect(fetch(back)).rejects.toThrow();
    expect((await login.ended).code).toBe(0);
  });

  it("refuses an answer without this login's state, saves nothing, and stops listening", async () => {
    const login = await startWebLogin();
    const back = await openInSignedInBrowser(login.link!);
    const forged = new URL(back);
    forged.searchParams.set('state', 'x'.repeat(43));
    const tab = await fetch(forged);
    expect(tab.status).toBe(400);
    const run = await login.ended;
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("Error: The browser's answer did not carry this login's state, so it was refused");
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(box.hasSession()).toBe(false);
    // The real answer, after the forged one, finds the listener closed.
    await expect(fetch(back)).rejects.toThrow();
  });

  it('ignores what a browser asks besides the answer (a favicon) and still takes the answer', async () => {
    const login = await startWebLogin();
    const listener = new URL(login.link!.searchParams.get('redirect_uri')!);
    expect((await fetch(new URL('/favicon.ico', listener))).status).toBe(404);
    expect((await fetch(await openInSignedInBrowser(login.link!))).status).toBe(200);
    expect((await login.ended).code).toBe(0);
  });

  it('the person denying it at the server: one line, nothing saved', async () => {
    const login = await startWebLogin();
    const listener = login.link!.searchParams.get('redirect_uri')!;
    const denied = new URL(listener);
    denied.search = new URLSearchParams({ error: 'access_denied', error_description: 'The person denied the request.', state: login.link!.searchParams.get('state')! }).toString();
    expect((await fetch(denied)).status).toBe(400);
    const run = await login.ended;
    expect(run.code).toBe(1);
    expect(run.stderr.split('\n').slice(-2)).toEqual([`Error: ${new URL(api.baseUrl).host} did not log you in: the request was denied (The person denied the request.). Nothing was saved.`, '']);
  });

  it('gives up after --timeout-seconds, closing the listener', async () => {
    const login = await startWebLogin(['--timeout-seconds', '1']);
    const run = await login.ended;
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Error: No answer from the browser within 1 s; nothing was saved.');
    await expect(fetch(login.link!.searchParams.get('redirect_uri')!)).rejects.toThrow();
  });

  it('over SSH without a display here: says why it cannot work and suggests device login', async () => {
    const run = await box.run(['auth:login', '--web', '--api-url', api.baseUrl], { env: { SSH_CONNECTION: '10.0.0.2 51000 10.0.0.1 22', SSH_TTY: '/dev/pts/1' } });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'Error: --web cannot work over SSH: your browser would come back to 127.0.0.1 of your own machine, not this one.\n' +
        'Use device login instead, which works from anywhere: prospect auth:login (without --web).\n',
    );
  });

  it('--web with --token, or asking for admin, is a usage error', async () => {
    expect((await box.run(['auth:login', '--web', '--token', 'prs_x', '--api-url', api.baseUrl])).code).toBe(2);
    const admin = await box.run(['auth:login', '--web', '--scopes', 'profile,tokens,admin', '--api-url', api.baseUrl]);
    expect(admin.code).toBe(2);
    expect(admin.stderr).toContain('--web cannot ask for admin');
  });
});

describe('device login turned off on the server (DEVICE_LOGIN_ENABLED=false)', () => {
  it('plain auth:login says so and points to --web and --token', async () => {
    const run = await box.run(['auth:login', '--api-url', api.baseUrl]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `Error: Device login is turned off on ${api.baseUrl}.\n` +
        `Log in through your browser: prospect auth:login --api-url ${api.baseUrl} --web; or create a token at ${api.baseUrl}/settings/tokens, then run: prospect auth:login --api-url ${api.baseUrl} --token -\n`,
    );
  });
});
