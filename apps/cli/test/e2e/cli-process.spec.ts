/**
 * The built binary as a person or a script runs it: exit codes, usage, the
 * guard, the session file — against backend variants the real API does not
 * produce (device login switched off, a dead server, a server that restarts).
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { assertBuilt, BUNDLE, makeSandbox, type Sandbox, validSession } from '../support/run-cli.js';
import { fakeBackend, json, user } from '../support/fake-backend.js';

const start = (url: string, extra: object = {}) => ({
  deviceCode: 'prsd_device',
  userCode: 'BCDF-GHJK',
  verificationUrl: `${url}/device?user_code=BCDF-GHJK`,
  intervalSeconds: 1,
  expiresInSeconds: 600,
  ...extra,
});

let box: Sandbox;
beforeAll(assertBuilt);
beforeEach(async () => (box = await makeSandbox()));
afterEach(() => box.cleanup());

describe('startup', () => {
  it('whoami, logout and api do not load Ink or React: the binary holds neither, only an import() of the login screen', async () => {
    const binary = await readFile(BUNDLE, 'utf8');
    expect(binary).not.toMatch(/react\.(transitional\.)?element|useInput|yoga/);
    expect(binary).toContain('import("./login-screen.mjs")');
  });
});

describe('usage', () => {
  it('prints help for every command and the version, exit 0', async () => {
    for (const command of ['auth:login', 'auth:whoami', 'auth:status', 'auth:token', 'auth:logout', 'api']) {
      for (const flag of ['--help', '-h']) {
        const run = await box.run([command, flag]);
        expect(run.code).toBe(0);
        expect(run.stdout).toContain(`$ prospect ${command}`);
      }
    }
    for (const args of [['--help'], [], ['help']]) {
      const help = await box.run(args);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/auth:login .*\n.*auth:whoami/);
    }
    const helpFor = await box.run(['help', 'auth:login']);
    expect(helpFor).toMatchObject({ code: 0, stderr: '' });
    expect(helpFor.stdout).toContain('$ prospect auth:login');
    for (const shell of ['bash', 'zsh', 'fish']) {
      const completion = await box.run(['completion', shell]);
      expect(completion.code).toBe(0);
      expect(completion.stdout).toContain('auth:whoami');
      expect(completion.stdout).toContain('--verify');
    }
    expect(await box.run(['--version'])).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  });

  it('runs as `npx prospect` from the repository root, as the README and `npm start` say', async () => {
    const root = fileURLToPath(new URL('../../../..', import.meta.url));
    const { stdout } = await promisify(execFile)('npm', ['exec', '--offline', '--', 'prospect', '--version'], { cwd: root });
    expect(stdout).toBe('0.1.0\n');
  });

  it.each([
    [['nope'], /^Error: Unknown command: nope\nUsage: prospect <command> \[options\]; commands: auth:login, auth:whoami, auth:status, auth:token, auth:logout, api\n$/],
    [['auth:whomai'], /^Error: Unknown command: auth:whomai \(did you mean `prospect auth:whoami`\?\)\n/],
    [['auth:whoami', '--bogus'], /^Error: Unknown option for auth:whoami: --bogus\nUsage: prospect auth:whoami \[--verify\] \[--json\]/],
    [['auth:whoami', '--verfy'], /^Error: Unknown option for auth:whoami: --verfy \(did you mean --verify\?\)\n/],
    [['auth:whoami', 'extra'], /^Error: auth:whoami takes no arguments, not "extra"\nUsage: prospect auth:whoami/],
    [['completion', 'tcsh'], /^Error: Say which shell: `prospect completion bash`, `zsh` or `fish`\./],
    [['help', 'nope'], /^Error: Unknown command: nope/],
    [['auth:login', '--timeout-seconds', 'soon'], /--timeout-seconds must be a whole number of seconds, got "soon"\.\nUsage: prospect auth:login/],
    [['auth:login', '--api-url', 'ftp://example.com'], /The backend must be an http\(s\) URL/],
  ])('refuses %j with a usage line, exit 2', async (args, stderr) => {
    const run = await box.run(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(stderr);
    expect(run.stdout).toBe('');
  });
});

describe('prospect api', () => {
  /** A backend that answers every request to /echo with what it received, and /conflict with a 409. */
  const echo = () =>
    fakeBackend({
      ...Object.fromEntries(['GET', 'POST', 'PUT'].map((method) => [`${method} /echo`, (_q: unknown, body: string, res: Parameters<typeof json>[0]) => json(res, 200, { body: body ? JSON.parse(body) : null }, { 'x-trace': 'abc' })])),
      'GET /conflict': (_q, _b, res) => json(res, 409, { statusCode: 409, error: 'conflict', message: 'Already there.' }, { 'x-trace': 'abc' }),
    });
  let backend: Awaited<ReturnType<typeof fakeBackend>>;
  beforeEach(async () => {
    backend = await echo();
    await box.writeSession(validSession(backend.url));
  });
  afterEach(() => backend.close());

  it('shows the HTTP status of an error answer, and nothing on stdout', async () => {
    const run = await box.run(['api', '/conflict']);
    expect(run).toMatchObject({ code: 1, stdout: '', stderr: 'Error: HTTP 409 conflict: Already there.\n' });
  });

  it('a token the server refuses: the login command for this backend, exit 4', async () => {
    await backend.close();
    backend = await fakeBackend({
      'GET /x': (_q, _b, res) =>
        json(res, 401, { statusCode: 401, error: 'invalid_token', message: 'revoked' }, { 'www-authenticate': 'Bearer error="invalid_token", error_description="token revoked"' }),
    });
    await box.writeSession(validSession(backend.url));
    const run = await box.run(['api', '/x']);
    expect(run.code).toBe(4);
    expect(run.stderr).toBe(`Error: Your token was revoked (logged out elsewhere, or by an admin) (${backend.url}) — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
  });

  it('prints one line of JSON into a pipe, so scripts get stable output', async () => {
    const run = await box.run(['api', '/echo']);
    expect(run).toMatchObject({ code: 0, stdout: '{"body":null}\n', stderr: '' });
  });

  it('-H sends headers (repeatable, a default replaced, a repeated name with both values)', async () => {
    const run = await box.run(['api', '/echo', '-H', 'X-Trace: one', '--header', 'x-trace:two', '-H', 'Accept: application/vnd.prospect+json']);
    expect(run.code).toBe(0);
    expect(backend.requests[0]!.headers).toMatchObject({ 'x-trace': 'one, two', accept: 'application/vnd.prospect+json', authorization: `Bearer prs_${'a'.repeat(43)}` });
  });

  it.each([
    [['-H', 'X-Trace'], /^Error: -H takes "Name: value", e\.g\. -H "Accept: application\/json"; one has no colon\.\n/],
    [['-H', ': value'], /^Error: -H: the header name before the colon is empty\.\n/],
    [['-H', 'X Trace: 1'], /^Error: -H: "X Trace" is not a valid header name\.\n/],
    [['-H', 'X-Trace: one\r\nX-Other: two'], /^Error: -H: a header cannot hold a line break \(CR or LF\)\.\n/],
    [['-H', 'X-Trace: one\ntwo'], /^Error: -H: a header cannot hold a line break/],
    [['-H', 'X-Trace: a\u0007b'], /^Error: -H X-Trace: the value holds a control character/],
    [['-H', 'Authorization: Bearer prs_mine'], /^Error: -H cannot set Authorization: prospect api sends the token of your session \(or PROSPECT_TOKEN\)\.\n/],
    [['-H', 'authorization:Basic eA=='], /^Error: -H cannot set Authorization/],
    [['-H', 'Content-Length: 3'], /^Error: -H cannot set Content-Length: the HTTP client sets it\.\n/],
  ])('refuses -H %j with a usage error, exit 2, nothing sent', async (args, stderr) => {
    const run = await box.run(['api', '/echo', ...args]);
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toMatch(stderr);
    expect(run.stderr).toContain('Usage: prospect api <path>');
    expect(run.stderr).not.toContain('prs_mine');
    expect(backend.requests).toEqual([]);
  });

  it('-i prints the status line and the headers, a blank line, then the body', async () => {
    const run = await box.run(['api', '-i', '/echo']);
    expect(run.code).toBe(0);
    const [head, body] = run.stdout.split('\n\n');
    const lines = head!.split('\n');
    expect(lines[0]).toBe('HTTP/1.1 200 OK');
    expect(lines).toContain('content-type: application/json');
    expect(lines).toContain('x-trace: abc');
    expect(body).toBe('{"body":null}\n');
    const plain = await box.run(['api', '/echo']);
    expect(plain.stdout).not.toContain('HTTP/1.1');
  });

  it('-i with an error answer: the status line and headers on stdout, the error line on stderr, exit 1', async () => {
    const run = await box.run(['api', '/conflict', '--include']);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^HTTP\/1\.1 409 Conflict\n(.+\n)*x-trace: abc\n(.+\n)*\n$/);
    expect(run.stderr).toBe('Error: HTTP 409 conflict: Already there.\n');
  });

  it('-f builds a JSON object of strings and makes the request a POST; -X still picks the method', async () => {
    const run = await box.run(['api', '/echo', '-f', 'label=ci', '--field', 'count=5', '-f', 'query=a=b', '-f', 'empty=']);
    expect(run.code).toBe(0);
    expect(backend.requests[0]!.method).toBe('POST');
    expect(backend.requests[0]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(run.stdout)).toEqual({ body: { label: 'ci', count: '5', query: 'a=b', empty: '' } });
    const put = await box.run(['api', '/echo', '-X', 'PUT', '-f', 'label=ci']);
    expect(put.code).toBe(0);
    expect(backend.requests[1]!.method).toBe('PUT');
  });

  it.each([
    [['-f', 'label'], /^Error: -f takes key=value, not "label"\.\n/],
    [['-f', '=ci'], /^Error: -f: the field name before the "=" is empty\.\n/],
    [['-f', 'label=a', '-f', 'label=b'], /^Error: -f label is given twice\.\n/],
  ])('refuses -f %j with a usage error, exit 2, nothing sent', async (args, stderr) => {
    const run = await box.run(['api', '/echo', ...args]);
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toMatch(stderr);
    expect(backend.requests).toEqual([]);
  });

  it('--input reads the JSON body from a file, or from stdin with -', async () => {
    const file = join(box.configDir, '..', 'body.json'); // inside the sandbox, removed with it
    await writeFile(file, '{"label": "from a file", "tags": ["a"]}\n');
    const fromFile = await box.run(['api', '/echo', '--input', file]);
    expect(fromFile.code).toBe(0);
    expect(backend.requests[0]!.method).toBe('POST');
    expect(JSON.parse(fromFile.stdout)).toEqual({ body: { label: 'from a file', tags: ['a'] } });
    const fromStdin = await box.run(['api', '/echo', '-X', 'PUT', '--input', '-'], { stdin: '{"label": "from stdin"}' });
    expect(fromStdin.code).toBe(0);
    expect(backend.requests[1]!.method).toBe('PUT');
    expect(JSON.parse(fromStdin.stdout)).toEqual({ body: { label: 'from stdin' } });
  });

  it.each([
    ['a missing file', ['--input', '/nonexistent/body.json'], {}, /^Error: --input: cannot read "\/nonexistent\/body\.json" \(ENOENT\)\.\n/],
    ['a directory', ['--input', '/'], {}, /^Error: --input: cannot read "\/" \(EISDIR\)\.\n/],
    ['stdin that is not JSON', ['--input', '-'], { stdin: 'label=ci\n{' }, /^Error: --input - \(stdin\) is not JSON\.\n/],
    ['no file name', ['--input='], {}, /^Error: --input takes a file name, or - for stdin\.\n/],
  ])('refuses --input with %s: one usage line, exit 2, nothing sent', async (_, args, options, stderr) => {
    const run = await box.run(['api', '/echo', ...args], options);
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toMatch(stderr);
    expect(backend.requests).toEqual([]);
  });

  it('refuses --input with a file that is not JSON', async () => {
    const file = join(box.configDir, '..', 'body.txt');
    await writeFile(file, 'label: ci\n');
    const run = await box.run(['api', '/echo', '--input', file]);
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr.split('\n')[0]).toBe(`Error: --input ${JSON.stringify(file)} is not JSON.`);
    expect(backend.requests).toEqual([]);
  });

  it.each([
    [['--data', '{}', '-f', 'a=b'], '--data and -f cannot be combined: give the request body one way.'],
    [['--data', '{}', '--input', '-'], '--data and --input cannot be combined: give the request body one way.'],
    [['--input', '-', '-f', 'a=b'], '--input and -f cannot be combined: give the request body one way.'],
    [['-d', '{}', '--input', '-', '-f', 'a=b'], '--data, --input and -f cannot be combined: give the request body one way.'],
    [['-X', 'GET', '-f', 'a=b'], 'A GET request carries no body: drop --data, --input or -f, or use -X POST.'],
  ])('refuses two bodies at once, or a body on a GET: %j, exit 2, nothing sent', async (args, message) => {
    const run = await box.run(['api', '/echo', ...args], { stdin: '{}' });
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr.split('\n')[0]).toBe(`Error: ${message}`);
    expect(backend.requests).toEqual([]);
  });

  it('its new options work with the unknown-option check and its did-you-mean, the help and the completion scripts', async () => {
    expect((await box.run(['api', '/echo', '--heder', 'X: 1'])).stderr).toMatch(/^Error: Unknown option for api: --heder \(did you mean --header\?\)\n/);
    expect((await box.run(['api', '/echo', '--inclde'])).stderr).toMatch(/^Error: Unknown option for api: --inclde \(did you mean --include\?\)\n/);
    expect(await box.run(['api', '/echo', '-Z'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/^Error: Unknown option for api: -Z\n/) });
    expect(backend.requests).toEqual([]);
    const help = await box.run(['help', 'api']);
    for (const option of ['--header, -H', '--include, -i', '--field, -f', '--input <file>', '--data, -d', '--method, -X']) expect(help.stdout).toContain(option);
    for (const shell of ['bash', 'zsh', 'fish']) {
      const completion = (await box.run(['completion', shell])).stdout;
      for (const option of ['--header', '--include', '--field', '--input']) expect(completion).toContain(option);
    }
  });
});

describe('PROSPECT_TOKEN, auth:status and auth:token', () => {
  const me = (token: string) => fakeBackend({
    'GET /api/cli/auth/me': (req, _b, res) =>
      req.headers.authorization === `Bearer ${token}`
        ? json(res, 200, { user, expiresAt: '2030-01-01T00:00:00.000Z' })
        : json(res, 401, { statusCode: 401, error: 'invalid_token', message: 'revoked' }, { 'www-authenticate': 'Bearer realm="prospect", error="invalid_token", error_description="token revoked"' }),
    'GET /x': (_q, _b, res) => json(res, 200, { ran: true }),
  });

  it('PROSPECT_TOKEN is used by every command instead of the session file, and never written', async () => {
    const backend = await me('prs_from_env');
    try {
      await box.writeSession(validSession(backend.url, { accessToken: 'prs_from_file' }));
      const env = { PROSPECT_TOKEN: 'prs_from_env', PROSPECT_API_BASE_URL: backend.url };
      expect((await box.run(['api', '/x'], { env })).code).toBe(0);
      expect(backend.requests.at(-1)!.authorization).toBe('Bearer prs_from_env');
      expect(await box.run(['auth:token'], { env })).toMatchObject({ code: 0, stdout: 'prs_from_env\n' });
      const status = await box.run(['auth:status', '--verify'], { env });
      expect(status.code).toBe(0);
      expect(status.stdout).toContain('Token:    from the PROSPECT_TOKEN environment variable');
      expect(status.stdout).toContain(`User:     ${user.name} <${user.email}>`);
      expect((await box.readSession()).accessToken).toBe('prs_from_file');
      const login = await box.run(['auth:login', '--token', 'prs_from_env'], { env });
      expect(login.stderr).toContain('Warning: PROSPECT_TOKEN is set');
      // A refused PROSPECT_TOKEN: logging in would not help, so the hint says what would.
      const refused = await box.run(['api', '/api/cli/auth/me'], { env: { ...env, PROSPECT_TOKEN: 'prs_revoked' } });
      expect(refused.code).toBe(4);
      expect(refused.stderr).toBe(
        `Error: ${backend.url} refused the token in PROSPECT_TOKEN: it is revoked.\nSet PROSPECT_TOKEN to a valid token, or unset it to use your session.\n`,
      );
      const refusedStatus = await box.run(['auth:status', '--verify'], { env: { ...env, PROSPECT_TOKEN: 'prs_revoked' } });
      expect(refusedStatus.code).toBe(4);
      expect(refusedStatus.stderr).toBe('Error: The server says the token is revoked — set PROSPECT_TOKEN to a valid token, or unset it to use your session.\n');
    } finally {
      await backend.close();
    }
  });

  it('auth:status says where the token comes from and what the server says; auth:token prints only the token', async () => {
    const backend = await me('prs_good');
    try {
      await box.writeSession(validSession(backend.url, { accessToken: 'prs_revoked' }));
      const local = await box.run(['auth:status']);
      expect(local.code).toBe(0);
      expect(local.stdout).toContain(`Server:   ${backend.url}`);
      expect(local.stdout).toMatch(/Token: +from .*auth-session\.json/);
      expect(local.stdout).toContain('Refresh:  none');
      const json = JSON.parse((await box.run(['auth:status', '--json'])).stdout);
      expect(json).toMatchObject({ server: backend.url, expired: false, usable: true, refreshToken: false });
      expect(JSON.stringify(json)).not.toContain('prs_revoked');
      const verified = await box.run(['auth:status', '--verify']);
      expect(verified.code).toBe(4);
      expect(verified.stdout).toContain('Server says: the token is revoked');
      expect(verified.stderr).toBe(`Error: The server says the token is revoked — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
      expect(await box.run(['auth:token'])).toMatchObject({ code: 0, stdout: 'prs_revoked\n', stderr: '' });
      await box.run(['auth:logout']);
      expect(await box.run(['auth:token'])).toMatchObject({ code: 4, stdout: '' });
    } finally {
      await backend.close();
    }
  });
});

describe('the auth guard (prospect api)', () => {
  it('without a session: "not logged in" with the login for the backend asked for, exit 4, and the command never runs', async () => {
    const backend = await fakeBackend({});
    try {
      const run = await box.run(['api', '/api/anything'], { env: { PROSPECT_API_BASE_URL: backend.url } });
      expect(run).toMatchObject({ code: 4, stdout: '' });
      expect(run.stderr).toBe(`Error: Not logged in — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
      const flag = await box.run(['api', '/api/anything', '--api-url', `${backend.url}/`]);
      expect(flag.stderr).toBe(`Error: Not logged in — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
      for (const command of ['auth:whoami', 'auth:status']) {
        expect((await box.run([command, '--api-url', backend.url])).stderr).toBe(`Error: Not logged in — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
      }
      expect(backend.requests).toEqual([]);
    } finally {
      await backend.close();
    }
  });

  it('without a session and no backend asked for, or the default one: the bare login command', async () => {
    for (const args of [['api', '/x'], ['api', '/x', '--api-url', 'http://localhost:3000/'], ['auth:whoami']]) {
      const run = await box.run(args);
      expect(run).toMatchObject({ code: 4, stderr: 'Error: Not logged in — run `prospect auth:login`.\n' });
    }
  });

  it('names even the default backend when PROSPECT_API_BASE_URL would send a bare login elsewhere', async () => {
    const run = await box.run(['api', '/x', '--api-url', 'http://localhost:3000'], { env: { PROSPECT_API_BASE_URL: 'http://127.0.0.1:9' } });
    expect(run).toMatchObject({ code: 4, stderr: 'Error: Not logged in — run `prospect auth:login --api-url http://localhost:3000`.\n' });
  });

  it('without a session, a backend that is not a URL is a usage error, not a hint to log in to it', async () => {
    const run = await box.run(['api', '/x', '--api-url', 'not a url']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('Error: Not a URL: "not a url".\nPass the backend as --api-url https://host\n');
  });

  it.each([
    ['corrupt JSON', '{"accessToken": "prs_', /is not valid JSON/],
    ['a partial file', JSON.stringify({ accessToken: 'prs_x' }), /is not a valid session \(apiBaseUrl: /],
    ['a wrongly typed field', JSON.stringify(validSession('http://localhost:3000', { user: 'ada' })), /is not a valid session \(user: /],
  ])('counts %s as no session, in one line without a stack trace', async (_, content, reason) => {
    await box.writeSession(content);
    const run = await box.run(['api', '/x']);
    expect(run.code).toBe(4);
    expect(run.stderr).toMatch(reason);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toMatch(/\bat .*\.js:\d+/);
    const whoami = await box.run(['auth:whoami']);
    expect(whoami.code).toBe(4);
    expect(whoami.stderr).toMatch(reason);
  });

  it('refuses an expired session before the command runs, exit 4', async () => {
    const backend = await fakeBackend({ 'GET /x': (_q, _b, res) => json(res, 200, { ran: true }) });
    try {
      await box.writeSession(validSession(backend.url, { expiresAt: '2020-01-01T00:00:00.000Z' }));
      const run = await box.run(['api', '/x']);
      expect(run).toMatchObject({ code: 4, stdout: '' });
      expect(run.stderr).toBe(`Error: Session expired at 2020-01-01T00:00:00.000Z — run \`prospect auth:login --api-url ${backend.url}\`.\n`);
      expect(backend.requests).toEqual([]);
    } finally {
      await backend.close();
    }
  });

  it('never calls an expired session logged in: auth:whoami says it expired, exit 4', async () => {
    await box.writeSession(validSession('http://127.0.0.1:9', { expiresAt: '2020-01-01T00:00:00.000Z' }));
    const run = await box.run(['auth:whoami']);
    expect(run).toMatchObject({ code: 4, stdout: '' });
    expect(run.stderr).toBe(
      `Error: Your session for http://127.0.0.1:9 (${user.email}) expired at 2020-01-01T00:00:00.000Z — run \`prospect auth:login --api-url http://127.0.0.1:9\`.\n`,
    );
  });

  it('an expired session for another backend than the one asked for: says to log in to the one asked for', async () => {
    await box.writeSession(validSession('http://127.0.0.1:9', { expiresAt: '2020-01-01T00:00:00.000Z' }));
    const run = await box.run(['api', '/x', '--api-url', 'http://127.0.0.1:8']);
    expect(run).toMatchObject({ code: 4, stdout: '' });
    expect(run.stderr).toBe('Error: Your session is for http://127.0.0.1:9, not http://127.0.0.1:8 — run `prospect auth:login --api-url http://127.0.0.1:8`.\n');
  });

  it('auth:whoami applies the same other-backend check as every command', async () => {
    await box.writeSession(validSession('http://127.0.0.1:9'));
    const run = await box.run(['auth:whoami', '--api-url', 'http://127.0.0.1:8']);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain('Your session is for http://127.0.0.1:9, not http://127.0.0.1:8');
  });

  it('says which session a new login replaces, and names itself on every request', async () => {
    const backend = await fakeBackend({ 'GET /api/cli/auth/me': (_q, _b, res) => json(res, 200, { user, expiresAt: '2030-01-01T00:00:00.000Z' }) });
    try {
      await box.writeSession(validSession('http://127.0.0.1:9'));
      const run = await box.run(['auth:login', '--api-url', backend.url, '--token', 'prs_new']);
      expect(run.code).toBe(0);
      expect(run.stderr).toContain(`Replaced the session of ${user.name} <${user.email}> on http://127.0.0.1:9.`);
      expect(backend.requests[0]!.userAgent).toMatch(/^prospect-cli\/0\.1\.0 \(linux; node \d+\.\d+\.\d+\)$/);
    } finally {
      await backend.close();
    }
  });

  it('never sends the token to another backend than the session’s', async () => {
    const mine = await fakeBackend({ 'GET /x': (_q, _b, res) => json(res, 200, { ran: true }) });
    const other = await fakeBackend({ 'GET /x': (_q, _b, res) => json(res, 200, { ran: true }) });
    try {
      await box.writeSession(validSession(mine.url));
      const envs: Array<Record<string, string>> = [{ PROSPECT_API_BASE_URL: other.url }, { PROSPECT_SKIP_AUTH: '1', PROSPECT_API_BASE_URL: other.url }];
      for (const env of envs) {
        const run = await box.run(['api', '/x'], { env });
        if (env.PROSPECT_SKIP_AUTH) {
          expect(run.code).toBe(0); // bypassed: the request goes out, but without the token
        } else {
          expect(run.code).toBe(4);
          expect(run.stderr).toContain(`Your session is for ${mine.url}, not ${other.url} — run \`prospect auth:login --api-url ${other.url}\`.`);
        }
      }
      const flag = await box.run(['api', '/x', '--api-url', other.url]);
      expect(flag.code).toBe(4);
      expect(mine.requests).toEqual([]);
      expect(other.requests.map((r) => r.authorization)).toEqual([undefined]);
    } finally {
      await mine.close();
      await other.close();
    }
  });

  it('sends the session’s token to the session’s backend and prints the JSON', async () => {
    const backend = await fakeBackend({ 'POST /api/things': (_q, body, res) => json(res, 201, { got: JSON.parse(body) }) });
    try {
      await box.writeSession(validSession(backend.url));
      const run = await box.run(['api', '/api/things', '--data', '{"name":"x"}']);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ got: { name: 'x' } });
      expect(backend.requests[0]).toMatchObject({ method: 'POST', authorization: `Bearer prs_${'a'.repeat(43)}` });
    } finally {
      await backend.close();
    }
  });
});

describe('a config directory that cannot be written', () => {
  /** A backend that would log anyone in: it must hear nothing. */
  const willingBackend = () =>
    fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(`http://127.0.0.1`)),
      'GET /api/cli/auth/me': (_q, _b, res) => json(res, 200, { user, expiresAt: '2030-01-01T00:00:00.000Z' }),
    });
  const refusal = (dir: string, reason: string) => `Error: Cannot log in: ${dir} cannot be written (${reason}); set PROSPECT_CONFIG_DIR to a directory you can write to.\n`;

  // A regular file in the path stops root too, for whom a read-only mode changes nothing.
  it('refuses a device login or a --token login before the server hears of it, in one sentence naming the directory, exit 1', async () => {
    const backend = await willingBackend();
    try {
      const file = join(box.configDir, '..', 'a-file');
      await writeFile(file, 'not a directory');
      for (const [dir, reason] of [
        [join(file, 'prospect'), 'part of the path is a file, not a directory'],
        [file, 'it is a file, not a directory'],
      ] as const) {
        for (const args of [['auth:login', '--api-url', backend.url], ['auth:login', '--api-url', backend.url, '--token', 'prs_x']]) {
          const run = await box.run(args, { env: { PROSPECT_CONFIG_DIR: dir } });
          expect(run).toEqual({ code: 1, signal: null, stdout: '', stderr: refusal(dir, reason) });
        }
      }
      expect(backend.requests).toEqual([]);
    } finally {
      await backend.close();
    }
  });

  it('refuses a login when no byte can be written (a full disk): the probe writes, not only creates', async () => {
    const backend = await willingBackend();
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url], { noFileWrites: true });
      expect(run).toMatchObject({ code: 1, stdout: '', stderr: refusal(box.configDir, 'the file size limit is reached') });
      expect(backend.requests).toEqual([]);
      expect(await readdir(box.configDir)).toEqual([]); // the probe file is gone
    } finally {
      await backend.close();
    }
  });

  it('every other command says what is wrong in one plain line, never "this is a bug"', async () => {
    const file = join(box.configDir, '..', 'a-file');
    await writeFile(file, 'not a directory');
    const dir = join(file, 'prospect');
    const logout = await box.run(['auth:logout'], { env: { PROSPECT_CONFIG_DIR: dir } });
    expect(logout).toMatchObject({ code: 1, stdout: '' });
    expect(logout.stderr).toBe(`Error: Cannot lock the session file in ${dir}: part of the path is a file, not a directory.\nCheck that the directory is writable (PROSPECT_CONFIG_DIR).\n`);
    for (const args of [['auth:whoami'], ['auth:status'], ['api', '/x']]) {
      const run = await box.run(args, { env: { PROSPECT_CONFIG_DIR: dir } });
      expect(run.stderr).not.toMatch(/bug|Unexpected/i);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});

describe('auth:login against backend variants', () => {
  it('device login in plain mode: URL and code as lines, then "Logged in as", session 0600 in a 0700 directory', async () => {
    let polls = 0;
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url)),
      'POST /api/cli/auth/device/poll': (_q, _b, res) =>
        json(res, 200, ++polls < 2 ? { status: 'pending' } : { status: 'authorized', accessToken: 'prs_device', expiresAt: '2030-01-01T00:00:00.000Z', user }),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url]);
      expect(run.code).toBe(0);
      expect(run.stdout).toBe(
        `To log in, open ${backend.url}/device?user_code=BCDF-GHJK\nand check that it shows the code BCDF-GHJK\n(you are signing in to ${new URL(backend.url).host})\n` +
          `Logged in as Ada Lovelace <ada@example.com> on ${backend.url}.\n`,
      );
      expect(run.stdout + run.stderr).not.toMatch(/\u001b\[/); // no escape codes
      expect(JSON.parse(backend.requests[0]!.body)).toEqual({ clientName: 'prospect CLI 0.1.0', hostname: expect.any(String) });
      const session = await box.readSession();
      expect(Object.keys(session).sort()).toEqual(['accessToken', 'apiBaseUrl', 'createdAt', 'expiresAt', 'user']);
      expect(session).toMatchObject({ accessToken: 'prs_device', apiBaseUrl: backend.url, user, expiresAt: '2030-01-01T00:00:00.000Z' });
      expect((await stat(box.sessionPath)).mode & 0o777).toBe(0o600);
      expect((await stat(box.configDir)).mode & 0o777).toBe(0o700);
    } finally {
      await backend.close();
    }
  });

  it('accepts verificationUri for verificationUrl', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => {
        const { verificationUrl, ...rest } = start(backend.url);
        json(res, 200, { ...rest, verificationUri: verificationUrl });
      },
      'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'denied' }),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url]);
      expect(run.stdout).toContain(`open ${backend.url}/device?user_code=BCDF-GHJK`);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`Error: Login was denied in the browser, or the code expired.\nRun \`prospect auth:login --api-url ${backend.url}\` to try again.\n`);
      expect(box.hasSession()).toBe(false);
    } finally {
      await backend.close();
    }
  });

  it.each([
    ['no address', { verificationUrl: undefined }, /malformed \(verificationUrl\)/],
    ['no user code', { userCode: undefined }, /malformed \(userCode\)/],
    ['a javascript: address', { verificationUrl: 'javascript:alert(1)' }, /Refusing to send you to "javascript:alert\(1\)": not an http\(s\) address/],
  ])('refuses a start response with %s, exit 1, nothing written', async (_, change, message) => {
    const backend = await fakeBackend({ 'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, { ...start(backend.url), ...change }) });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(message);
      expect(box.hasSession()).toBe(false);
    } finally {
      await backend.close();
    }
  });

  it.each([404, 405, 501])('start answering %i: points to token login with the exact command', async (status) => {
    const backend = await fakeBackend({ 'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, status, { statusCode: status, error: 'not_found', message: 'Not found.' }) });
    try {
      const run = await box.run(['auth:login'], { env: { PROSPECT_API_BASE_URL: backend.url } });
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `Error: ${backend.url} does not offer device login.\n` +
          `Create a token at ${backend.url}/settings/tokens, then run: prospect auth:login --api-url ${backend.url} --token -\n`,
      );
    } finally {
      await backend.close();
    }
  });

  it('a server that cannot be reached gets its own message', async () => {
    const backend = await fakeBackend({});
    await backend.close();
    const run = await box.run(['auth:login', '--api-url', backend.url]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `Error: Cannot reach ${backend.url} (ECONNREFUSED).\nCheck the address (--api-url or PROSPECT_API_BASE_URL) and that the server is running.\n`,
    );
  });

  it('rides out a restarting server and a 429 slow_down while it waits', async () => {
    let polls = 0;
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url)),
      'POST /api/cli/auth/device/poll': (req, _b, res) => {
        polls++;
        if (polls === 1) return req.socket.destroy();
        if (polls === 2) return json(res, 503, { statusCode: 503, error: 'service_unavailable', message: 'Restarting.' });
        if (polls === 3) return json(res, 429, { statusCode: 429, error: 'slow_down', message: 'Slow down.' }, { 'retry-after': '1' });
        return json(res, 200, { status: 'authorized', accessToken: 'prs_device', expiresAt: '2030-01-01T00:00:00.000Z', user });
      },
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url]);
      const host = new URL(backend.url).host;
      expect(run.stderr).toContain(`Can't reach ${host}; trying again in 1 s.\n${host} is briefly unavailable; trying again in 1 s.\n`);
      expect(run.stderr).toContain('The server asked to poll less often: every 6 s.');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('Logged in as Ada Lovelace <ada@example.com>');
    } finally {
      await backend.close();
    }
  });

  it('Retry-After: 99999999 on slow_down is a minute: no overflowed timer, no storm of polls', async () => {
    const polls: string[] = [];
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url, { intervalSeconds: 1, expiresInSeconds: 999_999_999 })),
      'POST /api/cli/auth/device/poll': (_q, body, res) => {
        polls.push(body);
        json(res, 429, { statusCode: 429, error: 'slow_down', message: 'Slow down.' }, { 'retry-after': '99999999' });
      },
      'POST /api/cli/auth/device/cancel': (_q, _b, res) => void res.writeHead(204).end(),
    });
    try {
      // The first poll after 1 s is told to wait 99999999 s: clamped to 60, it outlasts the 3 s given.
      const run = await box.run(['auth:login', '--api-url', backend.url, '--timeout-seconds', '3']);
      expect(run.stderr).toContain('Waiting for approval (0:03 left)…\nThe server asked to poll less often: every 60 s.\n');
      expect(run.stderr).toContain('Error: Gave up waiting for approval after 3 s.');
      expect(run.stderr).not.toMatch(/TimeoutOverflowWarning/);
      expect(run.code).toBe(1);
      expect(polls).toHaveLength(1);
    } finally {
      await backend.close();
    }
  });

  it('a lifetime of 999999999 s counts down from an hour, and the interval of as many seconds is a minute', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url, { intervalSeconds: 999_999_999, expiresInSeconds: 999_999_999 })),
      'POST /api/cli/auth/device/cancel': (_q, _b, res) => void res.writeHead(204).end(),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url], {
        onStarted: (child, output) => {
          let stopped = false;
          child.stderr!.on('data', () => !stopped && output().includes('left)') && (stopped = child.kill('SIGINT')));
        },
      });
      expect(run.stderr).toContain('Waiting for approval (60:00 left)…');
      expect(run.code).toBe(130);
      expect(backend.requests.map((r) => r.url)).toEqual(['/api/cli/auth/device/start', '/api/cli/auth/device/cancel']);
    } finally {
      await backend.close();
    }
  });

  it('--timeout-seconds: gives up with a clear failure, exit 1, nothing written', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url)),
      'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'pending' }),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url, '--timeout-seconds', '1']);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain(`Error: Gave up waiting for approval after 1 s.\nRun \`prospect auth:login --api-url ${backend.url}\` to get a new code.\n`);
      expect(box.hasSession()).toBe(false);
      // The code can no longer be approved in the browser.
      expect(backend.requests.filter((r) => r.url === '/api/cli/auth/device/cancel').map((r) => JSON.parse(r.body))).toEqual([{ deviceCode: 'prsd_device' }]);
    } finally {
      await backend.close();
    }
  });

  it('Ctrl-C while waiting: exit 130, nothing written', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start(backend.url)),
      'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'pending' }),
    });
    try {
      const run = await box.run(['auth:login', '--api-url', backend.url], {
        onStarted: (child, output) => {
          const whenWaiting = setInterval(() => {
            if (output().includes('Waiting for approval')) {
              clearInterval(whenWaiting);
              child.kill('SIGINT');
            }
          }, 20);
        },
      });
      expect(run.code).toBe(130);
      expect(run.stderr).toContain('Cancelled. Nothing was saved.');
      expect(box.hasSession()).toBe(false);
      expect(backend.requests.filter((r) => r.url === '/api/cli/auth/device/cancel').map((r) => JSON.parse(r.body))).toEqual([{ deviceCode: 'prsd_device' }]);
    } finally {
      await backend.close();
    }
  });

  it('--token: the /me answer may be flat or wrapped in data; a malformed one is a clear error', async () => {
    const answers: unknown[] = [{ ...user, expiresAt: '2030-01-01T00:00:00.000Z' }, { data: { user, expiresAt: '2030-01-01T00:00:00.000Z' } }, { hello: 'world' }];
    const backend = await fakeBackend({ 'GET /api/cli/auth/me': (_q, _b, res) => json(res, 200, answers.shift()) });
    try {
      for (let i = 0; i < 2; i++) {
        const run = await box.run(['auth:login', '--api-url', backend.url, '--token', 'prs_given']);
        expect(run.code).toBe(0);
        expect((await box.readSession()).user).toEqual(user);
      }
      await box.cleanup();
      const bad = await box.run(['auth:login', '--api-url', backend.url, '--token', 'prs_given']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('The server answered /api/cli/auth/me with an unexpected shape.');
      expect(box.hasSession()).toBe(false);
    } finally {
      await backend.close();
    }
  });
});

describe('auth:logout', () => {
  it('removes the session even when the server cannot be told, and is idempotent', async () => {
    const backend = await fakeBackend({});
    await backend.close();
    await box.writeSession(validSession(backend.url));
    const run = await box.run(['auth:logout']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`Logged out of ${backend.url} (the server could not be told; the local session is removed).\n`);
    expect(box.hasSession()).toBe(false);
    expect(await box.run(['auth:logout'])).toMatchObject({ code: 0, stdout: 'Not logged in.\n' });
  });
});

describe('refreshing the session against a flaky network', () => {
  it('an answer lost after the server rotated is asked for again at once, and the command runs', async () => {
    let calls = 0;
    const backend = await fakeBackend({
      'POST /api/cli/auth/refresh': (req, _body, res) => {
        calls += 1;
        // The first answer never arrives: the connection drops, as after a server-side commit.
        if (calls === 1) return req.socket.destroy();
        json(res, 200, { status: 'authorized', accessToken: 'prs_renewed', refreshToken: 'prsr_renewed', expiresAt: new Date(Date.now() + 3_600_000).toISOString(), user });
      },
    });
    try {
      await box.writeSession(validSession(backend.url, { accessToken: 'prs_old', refreshToken: 'prsr_old', expiresAt: new Date(Date.now() - 1000).toISOString() }));
      const run = await box.run(['auth:token']);
      expect(run).toMatchObject({ code: 0, stdout: 'prs_renewed\n', stderr: '' });
      expect(backend.requests.filter((r) => r.url === '/api/cli/auth/refresh').map((r) => JSON.parse(r.body))).toEqual([
        { refreshToken: 'prsr_old' },
        { refreshToken: 'prsr_old' },
      ]);
      expect(await box.readSession()).toMatchObject({ accessToken: 'prs_renewed', refreshToken: 'prsr_renewed' });
    } finally {
      await backend.close();
    }
  });

  it('a renewed pair that cannot be saved (a full disk): one sentence naming the file, the old pair kept, and the next run recovers with it', async () => {
    // As the server's rule has it: the just-rotated token answers the same successor until that is used.
    const successor = { status: 'authorized', accessToken: 'prs_renewed', refreshToken: 'prsr_renewed', expiresAt: new Date(Date.now() + 3_600_000).toISOString(), user };
    const backend = await fakeBackend({ 'POST /api/cli/auth/refresh': (_q, _b, res) => json(res, 200, successor) });
    try {
      await box.writeSession(validSession(backend.url, { accessToken: 'prs_old', refreshToken: 'prsr_old', expiresAt: new Date(Date.now() - 1000).toISOString() }));
      const before = await readFile(box.sessionPath, 'utf8');
      const full = await box.run(['auth:token'], { noFileWrites: true });
      expect(full).toEqual({
        code: 1,
        signal: null,
        stdout: '',
        stderr: `Error: The renewed session could not be saved to ${box.sessionPath} (the file size limit is reached); the previous one is kept, and the next command renews it again.\n`,
      });
      expect(await readFile(box.sessionPath, 'utf8')).toBe(before);
      expect(await readdir(box.configDir)).toEqual(['auth-session.json']); // no temp file, no lock left
      const next = await box.run(['auth:token']);
      expect(next).toMatchObject({ code: 0, stdout: 'prs_renewed\n', stderr: '' });
      expect(backend.requests.map((r) => JSON.parse(r.body))).toEqual([{ refreshToken: 'prsr_old' }, { refreshToken: 'prsr_old' }]);
      expect(await box.readSession()).toMatchObject({ accessToken: 'prs_renewed', refreshToken: 'prsr_renewed' });
    } finally {
      await backend.close();
    }
  });

  it('a refresh refused by the server removes the session and exits 4; an answer of the wrong shape keeps it and exits 1', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/refresh': (req, body, res) =>
        JSON.parse(body).refreshToken === 'prsr_odd'
          ? json(res, 200, { hello: 'world' })
          : json(res, 401, { statusCode: 401, error: 'invalid_grant', message: 'This refresh token was already used, so the session has been revoked everywhere.' }),
    });
    try {
      const expired = { expiresAt: new Date(Date.now() - 1000).toISOString() };
      await box.writeSession(validSession(backend.url, { ...expired, refreshToken: 'prsr_odd' }));
      expect(await box.run(['auth:token'])).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/answered the refresh with an unexpected shape; the session is kept/) });
      expect(box.hasSession()).toBe(true);
      await box.writeSession(validSession(backend.url, { ...expired, refreshToken: 'prsr_reused' }));
      const refused = await box.run(['auth:token'], { env: { PROSPECT_API_BASE_URL: backend.url } });
      expect(refused).toMatchObject({ code: 4, stdout: '' });
      expect(refused.stderr).toBe(
        `Error: This refresh token was already used, so the session has been revoked everywhere. The local session is removed — run \`prospect auth:login --api-url ${backend.url}\`.\n`,
      );
      expect(box.hasSession()).toBe(false);
    } finally {
      await backend.close();
    }
  });
});
