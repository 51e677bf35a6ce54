/**
 * `prospect api` creating a token (issue #32): the request carries an Idempotency-Key, one per
 * invocation, the same on each of its own sends; a lost answer (a dropped connection, a proxy's
 * 502) or a busy key (409) is sent again with it, and nothing else is. In-process, against fake
 * backends and the real API (behind a TCP proxy that loses the first answer after the commit).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { ROUTES } from '@prospect/contract';
import { TokensService } from '../../api/src/tokens/tokens.service.js';
import { TcpProxy } from '../../api/test/support/tcp-proxy.js';
import { runCli } from '../src/cli.js';
import { capturedStream } from './support/captured-stream.js';
import { fakeBackend, json, user } from './support/fake-backend.js';
import { cliToken, createUser, startRealApi, type TestApp } from './support/real-api.js';

let configDir: string;
beforeEach(async () => (configDir = await mkdtemp(join(tmpdir(), 'prospect-idempotency-'))));
afterEach(() => rm(configDir, { recursive: true, force: true }));

async function api(baseUrl: string, args: string[], token = 'prs_env') {
  const stdout = capturedStream();
  const stderr = capturedStream();
  const code = await runCli(['api', ...args], {
    env: { PROSPECT_TOKEN: token, PROSPECT_API_BASE_URL: baseUrl, PROSPECT_CONFIG_DIR: configDir },
    stdout: stdout.out,
    stderr: stderr.out,
    stdin: Readable.from([]) as unknown as NodeJS.ReadStream,
    signal: new AbortController().signal,
  });
  return { code, stdout: stdout.written(), stderr: stderr.written() };
}

const issued = { accessToken: 'prs_made', expiresAt: '2030-01-01T00:00:00.000Z', user };
/** An sf-string holding a random UUID (draft-ietf-httpapi-idempotency-key-header §2.1). */
const UUID_KEY = /^"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"$/;

/** A backend whose token route answers with `answers` in turn (the last one from then on). */
async function tokenBackend(...answers: Array<(res: http.ServerResponse, req: http.IncomingMessage) => void>) {
  let calls = 0;
  const answer = (req: http.IncomingMessage, _body: string, res: http.ServerResponse) => answers[Math.min(calls++, answers.length - 1)]!(res, req);
  return fakeBackend({
    [`POST ${ROUTES.issueToken}`]: answer,
    [`POST ${ROUTES.issueToken}/`]: answer,
    'POST /api/other': answer,
    'GET /x': (_q, _b, res) => json(res, 200, {}),
  });
}
const created = (res: http.ServerResponse) => json(res, 201, issued);
/** The server died after its work: the connection closes with no answer. */
const lostAnswer = (_res: http.ServerResponse, req: http.IncomingMessage) => req.socket.destroy();
const badGateway = (res: http.ServerResponse) => json(res, 502, { statusCode: 502, error: 'bad_gateway', message: 'No answer.' });
const busy = (res: http.ServerResponse) => json(res, 409, { statusCode: 409, error: 'conflict', message: 'A request with this Idempotency-Key is in progress.' }, { 'retry-after': '1' });

describe('prospect api POST /api/cli/auth/token', () => {
  it('sends an Idempotency-Key, a new one for each invocation; other requests carry none', async () => {
    const backend = await tokenBackend(created);
    try {
      expect(await api(backend.url, [ROUTES.issueToken, '-f', 'label=ci'])).toMatchObject({ code: 0, stdout: `${JSON.stringify(issued)}\n` });
      expect((await api(backend.url, ['-X', 'POST', `${ROUTES.issueToken}/`])).code).toBe(0);
      expect((await api(backend.url, ['/api/other', '-f', 'a=b'])).code).toBe(0);
      expect((await api(backend.url, ['/x'])).code).toBe(0);
      const keys = backend.requests.map((r) => r.headers['idempotency-key']);
      expect(keys[0]).toMatch(UUID_KEY);
      expect(keys[1]).toMatch(UUID_KEY);
      expect(keys[1]).not.toBe(keys[0]);
      expect(keys.slice(2)).toEqual([undefined, undefined]);
    } finally {
      await backend.close();
    }
  });

  it.each([
    ['the connection dropped with no answer', lostAnswer],
    ['a proxy answered 502', badGateway],
    ['the key was busy (409, Retry-After: 1)', busy],
  ])('%s: sent again with the same key, and its answer printed', async (_case, first) => {
    const backend = await tokenBackend(first, created);
    try {
      const run = await api(backend.url, [ROUTES.issueToken, '-f', 'label=ci']);
      expect(run).toEqual({ code: 0, stdout: `${JSON.stringify(issued)}\n`, stderr: '' });
      const [a, b] = backend.requests;
      expect(backend.requests).toHaveLength(2);
      expect(a!.headers['idempotency-key']).toMatch(UUID_KEY);
      expect(b!.headers['idempotency-key']).toBe(a!.headers['idempotency-key']);
      expect(b!.body).toBe(a!.body);
    } finally {
      await backend.close();
    }
  });

  it('gives up after three sends, with the last answer', async () => {
    const backend = await tokenBackend(badGateway);
    try {
      const run = await api(backend.url, ['-X', 'POST', ROUTES.issueToken]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/HTTP 502/);
      expect(new Set(backend.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
      expect(backend.requests).toHaveLength(3);
    } finally {
      await backend.close();
    }
  });

  it('a key given with -H is sent as given (once), and the request is sent again with it', async () => {
    const backend = await tokenBackend(lostAnswer, created);
    try {
      expect((await api(backend.url, ['-X', 'POST', ROUTES.issueToken, '-H', 'idempotency-key: "mine-1"'])).code).toBe(0);
      expect(backend.requests.map((r) => r.headers['idempotency-key'])).toEqual(['"mine-1"', '"mine-1"']);
    } finally {
      await backend.close();
    }
  });

  it('any other write whose answer is lost is not sent again: only the caller can tell whether it went through', async () => {
    const backend = await tokenBackend(lostAnswer, created);
    try {
      const run = await api(backend.url, ['/api/other', '-f', 'a=b']);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^Error: Cannot reach /);
      expect(backend.requests).toHaveLength(1);
    } finally {
      await backend.close();
    }
  });
});

describe('prospect api POST /api/cli/auth/token against the real API, whose first answer is lost after the commit', () => {
  let server: TestApp;
  beforeAll(async () => {
    server = await startRealApi();
  });
  afterAll(() => server?.close());

  it('prints the token the lost answer carried, and only that one token exists', async () => {
    const person = await createUser(server);
    const token = await cliToken(server, person);
    const dying = new TcpProxy('127.0.0.1', Number(new URL(server.baseUrl).port));
    await dying.start();
    try {
      const dropped = dying.dropAnswerTo(`POST ${ROUTES.issueToken} `);
      const run = await api(`http://127.0.0.1:${dying.port}`, [ROUTES.issueToken, '-f', 'label=ci'], token);
      await dropped;
      expect(run.code).toBe(0);
      const printed = JSON.parse(run.stdout) as { accessToken: string };
      // The person's tokens as the tokens page lists them, revoked and expired ones included.
      const made = (await server.app.get(TokensService).listForUser(person.id)).filter((listed) => listed.label === 'ci');
      expect(made).toHaveLength(1);
      const me = await fetch(server.baseUrl + ROUTES.me, { headers: { authorization: `Bearer ${printed.accessToken}` } });
      expect(me.status).toBe(200);
    } finally {
      await dying.cut();
    }
  });
});
