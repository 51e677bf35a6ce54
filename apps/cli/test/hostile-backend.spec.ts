import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../src/api-client/api-client.js';
import { MAX_ANSWER_BYTES } from '../src/api-client/network.js';
import { stripControls } from '../src/api-client/untrusted-text.js';
import { DeviceLoginClient, type WaitEvent } from '../src/device-login/device-login-client.js';
import { CliError } from '../src/errors.js';
import { exchangeFederatedToken } from '../src/workload-identity/token-exchange.js';
import { refreshSession } from '../src/session/refresh.js';
import { SessionStore } from '../src/session/session-store.js';
import { fakeBackend, inAnHour, json, user } from './support/fake-backend.js';
import { fakeTiming } from './support/fake-timing.js';

const ESC = '\u001b';
const BEL = '\u0007';

describe('a hostile server', () => {
  it.each([
    [`${ESC}]0;pwned${BEL}Ada`, 'Ada'],
    [`${ESC}[2K${ESC}[1AAda`, 'Ada'],
    [`${ESC}[31mAda${ESC}[0m`, 'Ada'],
    [`Ada\u009b31m`, 'Ada'],
    [`A\rd\ba\u0000`, 'Ada'],
    ['Ada Lovelace', 'Ada Lovelace'],
  ])('cannot reach the terminal through a string: %j → %j', (input, shown) => {
    expect(stripControls(input)).toBe(shown);
  });

  it.each([
    // U+202E prints what follows reversed: "evil.test/\u202emoc.elpmaxe.di" would read as "evil.test/id.example.com".
    ['a right-to-left override', 'evil.test/\u202emoc.elpmaxe.di', 'evil.test/moc.elpmaxe.di'],
    ['every embedding and override', '\u202aA\u202bd\u202ca\u202d \u202eL', 'Ada L'],
    ['every isolate', '\u2066A\u2067d\u2068a\u2069', 'Ada'],
    ['the direction marks LRM, RLM and ALM', 'A\u200ed\u200fa\u061c', 'Ada'],
  ])('cannot reorder what the terminal shows with bidi controls: %s', (_, input, shown) => {
    expect(stripControls(input)).toBe(shown);
  });

  it('has every string of its answers stripped, error messages included', async () => {
    const backend = await fakeBackend({
      'GET /api/cli/auth/me': (_req, _b, res) =>
        json(res, 200, { user: { id: 'u1', email: `ada@example.com${ESC}[8m`, name: `${ESC}]0;owned${BEL}Ada` }, expiresAt: inAnHour() }),
      'POST /api/cli/auth/logout': (_req, _b, res) => json(res, 403, { statusCode: 403, error: 'forbidden', message: `No${ESC}[2K${ESC}[1A you may not` }),
    });
    try {
      const api = new ApiClient({ baseUrl: backend.url });
      expect((await api.me('prs_x')).user).toEqual({ id: 'u1', email: 'ada@example.com', name: 'Ada' });
      await expect(api.request('POST', '/api/cli/auth/logout')).rejects.toThrow('No you may not');
    } finally {
      await backend.close();
    }
  });

  it('cannot make the CLI read a huge answer', async () => {
    const backend = await fakeBackend({
      'GET /api/cli/auth/me': (_req, _b, res) => {
        // No Content-Length: the CLI must stop reading by itself.
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = 'x'.repeat(64 * 1024);
        let sent = 0;
        const pump = () => {
          while (sent < 4 * MAX_ANSWER_BYTES) {
            sent += chunk.length;
            if (!res.write(chunk)) return res.once('drain', pump);
          }
          res.end();
        };
        pump();
      },
      'GET /api/cli/auth/big': (_req, _b, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(2 * MAX_ANSWER_BYTES) });
        res.end();
      },
    });
    try {
      const api = new ApiClient({ baseUrl: backend.url });
      const refusal = new CliError(`The server's answer is larger than 1 MiB; refusing to read it.`);
      await expect(api.me('prs_x')).rejects.toThrow(refusal.message);
      await expect(api.request('GET', '/api/cli/auth/big')).rejects.toThrow(refusal.message);
    } finally {
      await backend.close();
    }
  });

  it.each([
    ['a user code of three groups', { userCode: 'ABCD-EFGH-JKLM' }, /not of the form XXXX-XXXX/],
    ['a user code with spaces', { userCode: 'ABCD EFGH' }, /not of the form XXXX-XXXX/],
    ['a javascript: address', { verificationUrl: 'javascript:alert(1)' }, /not an http\(s\) address/],
  ])('is refused when it sends %s', async (_, change, error) => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_req, _b, res) =>
        json(res, 200, { deviceCode: 'prsd_x', userCode: 'BCDF-GHJK', verificationUrl: 'http://id.example.com/device', intervalSeconds: 5, expiresInSeconds: 600, ...change }),
    });
    try {
      const client = new DeviceLoginClient(new ApiClient({ baseUrl: backend.url }));
      await expect(client.start({ clientName: 'prospect', hostname: 'h' })).rejects.toThrow(error);
    } finally {
      await backend.close();
    }
  });

  it('has its verification address shown as the browser will read it', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_req, _b, res) =>
        json(res, 200, { deviceCode: 'prsd_x', userCode: 'BCDF-GHJK', verificationUrl: 'HTTP://ID.Example.com:80/device?user_code=BCDF-GHJK', intervalSeconds: 5, expiresInSeconds: 600 }),
    });
    try {
      const start = await new DeviceLoginClient(new ApiClient({ baseUrl: backend.url })).start({ clientName: 'prospect', hostname: 'h' });
      expect(start.verificationUrl).toBe('http://id.example.com/device?user_code=BCDF-GHJK');
    } finally {
      await backend.close();
    }
  });

  describe('cannot stretch the time the CLI waits', () => {
    const huge = 999_999_999;
    const startAnswer = (url: string) => ({ deviceCode: 'prsd_x', userCode: 'BCDF-GHJK', verificationUrl: `${url}/device`, intervalSeconds: huge, expiresInSeconds: huge });

    it('an interval or a lifetime of years is taken as a minute and an hour', async () => {
      const backend = await fakeBackend({ 'POST /api/cli/auth/device/start': (_req, _b, res) => json(res, 200, startAnswer(backend.url)) });
      try {
        const start = await new DeviceLoginClient(new ApiClient({ baseUrl: backend.url })).start({ clientName: 'prospect', hostname: 'h' });
        expect(start).toMatchObject({ intervalSeconds: 60, expiresInSeconds: 3600 });
      } finally {
        await backend.close();
      }
    });

    it('Retry-After: 99999999 on slow_down or a 503 waits at most a minute, and a countdown starts at an hour', async () => {
      const answers = [
        [429, { statusCode: 429, error: 'slow_down', message: 'Slow down.' }, { 'retry-after': '99999999' }],
        [503, { statusCode: 503, error: 'service_unavailable', message: 'Back soon.' }, { 'retry-after': '99999999' }],
        [429, { statusCode: 429, error: 'slow_down', message: 'Slow down.' }, { 'retry-after': '-5' }],
        [200, { status: 'authorized', accessToken: 'prs_x', expiresAt: inAnHour(), user }, {}],
      ] as const;
      let polls = 0;
      const backend = await fakeBackend({
        'POST /api/cli/auth/device/start': (_req, _b, res) => json(res, 200, startAnswer(backend.url)),
        'POST /api/cli/auth/device/poll': (_req, _b, res) => json(res, ...(answers[polls++]! as unknown as [number, object, Record<string, string>])),
      });
      const { timing, sleeps } = fakeTiming(0);
      const events: WaitEvent[] = [];
      try {
        const client = new DeviceLoginClient(new ApiClient({ baseUrl: backend.url }), timing);
        const start = await client.start({ clientName: 'prospect', hostname: 'h' });
        await expect(client.waitForAuthorization(start, { onEvent: (e) => events.push(e) })).resolves.toMatchObject({ accessToken: 'prs_x' });
        expect(sleeps).toEqual([60_000, 60_000, 5_000, 60_000]);
        expect(events[0]).toEqual({ kind: 'waiting', deadline: 3_600_000 });
      } finally {
        await backend.close();
      }
    });
  });

  describe('cannot redirect a secret elsewhere', () => {
    let other: Awaited<ReturnType<typeof fakeBackend>>;
    let backend: Awaited<ReturnType<typeof fakeBackend>>;
    afterEach(async () => {
      await backend.close();
      await other.close();
    });

    it.each([301, 302, 303, 307, 308])('a %i answer is an error naming the other origin, and the other origin hears nothing', async (status) => {
      other = await fakeBackend({ 'POST /steal': (_req, _b, res) => json(res, 200, {}) });
      backend = await fakeBackend({ 'POST /api/cli/auth/device/poll': (_req, _b, res) => json(res, status, {}, { location: `${other.url}/steal` }) });
      const answer = new ApiClient({ baseUrl: backend.url }).request('POST', '/api/cli/auth/device/poll', { body: { deviceCode: 'prsd_secret' }, token: 'prs_secret' });
      await expect(answer).rejects.toThrow(`POST /api/cli/auth/device/poll was redirected (HTTP ${status}) to ${other.url}; prospect follows no redirect, so nothing was sent there.`);
      expect(other.requests).toEqual([]);
    });

    it('a cross-origin 307 on POST /refresh: the refresh token stays here, and so does the session', async () => {
      other = await fakeBackend({
        'POST /api/cli/auth/refresh': (_req, _b, res) => json(res, 401, { statusCode: 401, error: 'invalid_grant', message: 'Unknown refresh token.' }),
      });
      backend = await fakeBackend({ 'POST /api/cli/auth/refresh': (_req, _b, res) => json(res, 307, {}, { location: `${other.url}/api/cli/auth/refresh` }) });
      const dir = await mkdtemp(join(tmpdir(), 'prospect-hostile-'));
      try {
        const store = new SessionStore(dir);
        const session = { accessToken: 'prs_old', refreshToken: 'prsr_secret', apiBaseUrl: backend.url, user, expiresAt: new Date(Date.now() - 1000).toISOString(), createdAt: new Date().toISOString() };
        await store.write(session);
        const refresh = refreshSession({ store, env: {}, signal: new AbortController().signal }, session);
        await expect(refresh).rejects.toThrow(`Could not refresh the session: POST /api/cli/auth/refresh was redirected (HTTP 307) to ${other.url}`);
        expect(other.requests).toEqual([]);
        expect(backend.requests.map((r) => r.body)).toEqual([JSON.stringify({ refreshToken: 'prsr_secret' })]);
        expect(await store.read()).toEqual({ kind: 'session', session });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
});

describe('a hostile token endpoint answering the token exchange', () => {
  const exchange = async (answer: (res: import('node:http').ServerResponse) => void) => {
    const backend = await fakeBackend({ 'POST /oauth/token': (_req, _b, res) => answer(res) });
    try {
      return await exchangeFederatedToken(new ApiClient({ baseUrl: backend.url }), { clientId: 'psa_x', subjectToken: 'a.b.c' }, new AbortController().signal).then(
        () => 'accepted',
        (err: unknown) => err,
      );
    } finally {
      await backend.close();
    }
  };

  it.each([
    ['wrong JSON', (res: import('node:http').ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_token": '), /answered|JSON|not/i],
    ['no lifetime', (res: import('node:http').ServerResponse) => json(res, 200, { access_token: 'prs_x', token_type: 'Bearer' }), /without an access token and its lifetime/],
    ['a token_type not Bearer', (res: import('node:http').ServerResponse) => json(res, 200, { access_token: 'prs_x', token_type: 'DPoP', expires_in: 3600 }), /issued a DPoP token/],
    // Printed bare with --no-store (controls are stripped from every answer already): what no Authorization header can carry is no token.
    ['a token no header can carry', (res: import('node:http').ServerResponse) => json(res, 200, { access_token: `prs_x ' $(id) "`, token_type: 'Bearer', expires_in: 3600 }), /not a token/],
    ['a huge body', (res: import('node:http').ServerResponse) => json(res, 200, { access_token: 'x'.repeat(MAX_ANSWER_BYTES + 10), token_type: 'Bearer', expires_in: 3600 }), /./],
  ])('%s: one line, nothing accepted', async (_, answer, says) => {
    const err = await exchange(answer);
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).message).toMatch(says);
    expect((err as CliError).message).not.toContain('\n');
    expect((err as CliError).message).not.toContain(ESC);
  });
});
