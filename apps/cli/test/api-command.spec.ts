/**
 * `prospect api` in-process, where the test decides whether stdout is a
 * terminal: indented JSON for a person, one line for a pipe.
 */
import { Readable, Writable } from 'node:stream';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../src/cli.js';
import { capturedStream } from './support/captured-stream.js';
import { fakeBackend, json } from './support/fake-backend.js';

let backend: Awaited<ReturnType<typeof fakeBackend>>;
let configDir: string;
beforeEach(async () => {
  backend = await fakeBackend({ 'GET /x': (_q, _b, res) => json(res, 200, { user: { name: 'Ada' }, ok: true }) });
  configDir = await mkdtemp(join(tmpdir(), 'prospect-api-command-'));
});
afterEach(async () => {
  await backend.close();
  await rm(configDir, { recursive: true, force: true });
});

async function api(args: string[], stdoutIsTTY: boolean) {
  const stdout = capturedStream(stdoutIsTTY);
  const stderr = capturedStream(false);
  const code = await runCli(['api', ...args], {
    env: { PROSPECT_TOKEN: 'prs_env', PROSPECT_API_BASE_URL: backend.url, PROSPECT_CONFIG_DIR: configDir },
    stdout: stdout.out,
    stderr: stderr.out,
    stdin: Readable.from([]) as unknown as NodeJS.ReadStream,
    signal: new AbortController().signal,
  });
  return { code, stdout: stdout.written(), stderr: stderr.written() };
}

describe('prospect api output', () => {
  it('is indented JSON when stdout is a terminal', async () => {
    expect(await api(['/x'], true)).toEqual({ code: 0, stdout: '{\n  "user": {\n    "name": "Ada"\n  },\n  "ok": true\n}\n', stderr: '' });
  });

  it('is one line of JSON when stdout is not a terminal', async () => {
    expect(await api(['/x'], false)).toEqual({ code: 0, stdout: '{"user":{"name":"Ada"},"ok":true}\n', stderr: '' });
  });

  it('with -i at a terminal: the head, a blank line, then the indented body', async () => {
    const run = await api(['-i', '/x'], true);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^HTTP\/1\.1 200 OK\n(.+\n)+\n\{\n  "user": \{\n/);
  });
});
