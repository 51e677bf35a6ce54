/**
 * `prospect api` as a script runs it: methods, bodies, headers, output, errors.
 * The built binary as a person or a script runs it (see ../support/run-cli.ts).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { validSession } from '../support/run-cli.js';
import { fakeBackend, json } from '../support/fake-backend.js';
import { box, useSandbox } from '../support/e2e-suite.js';

useSandbox();

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
