import { ApiClient } from '../src/api-client/api-client.js';
import { ApiHttpError, ApiUnreachableError } from '../src/api-client/api-errors.js';
import { normalizeBaseUrl } from '../src/api-client/base-url.js';
import { loginCommandLine } from '../src/api-client/login-hints.js';
import { normalizeMeResponse } from '../src/api-client/me-answer.js';
import { CliError, EXIT } from '../src/errors.js';
import { fakeBackend, inAnHour, json, user } from './support/fake-backend.js';

describe('GET /api/cli/auth/me normalization (seed §4.3)', () => {
  const expiresAt = '2030-01-01T00:00:00.000Z';

  it.each([
    ['top-level user', { user, expiresAt }],
    ['flat user', { ...user, expiresAt }],
    ['wrapped in data', { data: { user, expiresAt } }],
  ])('accepts the %s variant', (_, body) => {
    expect(normalizeMeResponse(body)).toEqual({ user, expiresAt });
  });

  it.each([
    ['top-level user', { user, expiresAt, madeWith: 'the token “CI runner”' }],
    ['wrapped in data', { data: { user, expiresAt, madeWith: 'the token “CI runner”' } }],
  ])('keeps madeWith, which token or session made this one, in the %s variant', (_, body) => {
    expect(normalizeMeResponse(body)).toEqual({ user, expiresAt, madeWith: 'the token “CI runner”' });
  });

  it('keeps /me\'s organizations (a token with `orgs`), and leaves out a list it cannot read rather than failing', () => {
    const organizations = [{ id: 'o-1', slug: 'acme', name: 'Acme', role: 'owner' }];
    expect(normalizeMeResponse({ user, expiresAt, organizations })).toEqual({ user, expiresAt, organizations });
    expect(normalizeMeResponse({ data: { user, expiresAt, organizations } })).toEqual({ user, expiresAt, organizations });
    expect(normalizeMeResponse({ user, expiresAt, organizations: [{ slug: 'acme' }] })).toEqual({ user, expiresAt });
    expect(normalizeMeResponse({ user, expiresAt, organizations: 'acme' })).toEqual({ user, expiresAt });
  });

  it('shows madeWith only as one line of plain text, and leaves out one that is not text', () => {
    const hostile = '\u001b]0;pwned\u0007the \u001b[31mProspect CLI\u001b[0m session on\u202e potpal\r\nFAKE LINE';
    expect(normalizeMeResponse({ user, expiresAt, madeWith: hostile }).madeWith).toBe('the Prospect CLI session on potpal FAKE LINE');
    expect(normalizeMeResponse({ user, expiresAt, madeWith: 'x'.repeat(5000) }).madeWith).toHaveLength(200);
    expect(normalizeMeResponse({ user, expiresAt, madeWith: 42 })).toEqual({ user, expiresAt });
    expect(normalizeMeResponse({ user, expiresAt, madeWith: ' \u0007 ' })).toEqual({ user, expiresAt });
  });

  it('reads a service account’s /me (issue #45): no address, its organization, and says so', () => {
    const body = { user: { id: 'sa-1', email: null, name: 'nightly' }, kind: 'service_account', organization: { id: 'o-1', slug: 'acme', name: 'Acme' }, expiresAt };
    expect(normalizeMeResponse(body)).toEqual({ user: { id: 'sa-1', email: '', name: 'nightly' }, expiresAt, serviceAccount: { organization: { id: 'o-1', slug: 'acme', name: 'Acme' } } });
    // A null address is a service account's only: a person's answer without one is refused.
    expect(() => normalizeMeResponse({ user: { id: 'u-1', email: null, name: 'A' }, expiresAt })).toThrow(CliError);
  });

  it.each([
    ['no expiry', { user }],
    ['no user', { expiresAt }],
    ['a user without an id', { user: { email: 'a@b.c', name: 'A' }, expiresAt }],
    ['a non-timestamp expiry', { user, expiresAt: 'tomorrow' }],
    ['a list', [user]],
    ['nothing', undefined],
  ])('refuses %s with a clear error', (_, body) => {
    expect(() => normalizeMeResponse(body)).toThrow(new CliError('The server answered /api/cli/auth/me with an unexpected shape.'));
  });
});

describe('ApiClient against a fake backend', () => {
  it('says a 503 without a Prospect error body is temporary', async () => {
    const backend = await fakeBackend({
      'GET /api/cli/auth/me': (_req, _b, res) => {
        res.writeHead(503, { 'content-type': 'text/html' });
        res.end('<h1>Service Unavailable</h1>');
      },
    });
    try {
      const err = await new ApiClient({ baseUrl: backend.url }).me('prs_token').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiHttpError);
      expect((err as ApiHttpError).message).toBe(`${new URL(backend.url).host} is briefly unavailable (HTTP 503); try again in a few seconds.`);
    } finally {
      await backend.close();
    }
  });

  it('sends the bearer token and normalizes each /me variant', async () => {
    for (const body of [{ user, expiresAt: inAnHour() }, { ...user, expiresAt: inAnHour() }, { data: { user, expiresAt: inAnHour() } }]) {
      const backend = await fakeBackend({ 'GET /api/cli/auth/me': (_req, _b, res) => json(res, 200, body) });
      try {
        const me = await new ApiClient({ baseUrl: `${backend.url}/` }).me('prs_token');
        expect(me.user).toEqual(user);
        expect(backend.requests[0]!.authorization).toBe('Bearer prs_token');
      } finally {
        await backend.close();
      }
    }
  });

  it('turns an error body into an ApiHttpError carrying its status, code and message', async () => {
    const backend = await fakeBackend({
      'GET /api/cli/auth/me': (_req, _b, res) =>
        json(res, 401, { statusCode: 401, error: 'invalid_token', message: 'Your token has expired.' }, { 'www-authenticate': 'Bearer error="invalid_token"' }),
    });
    try {
      const err = await new ApiClient({ baseUrl: backend.url }).me('t').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiHttpError);
      expect(err).toMatchObject({ status: 401, code: 'invalid_token', message: 'Your token has expired.' });
    } finally {
      await backend.close();
    }
  });

  it('says clearly when a 200 is not JSON, and when the server cannot be reached', async () => {
    const backend = await fakeBackend({ 'GET /api/cli/auth/me': (_req, _b, res) => res.end('<html>hello</html>') });
    const api = new ApiClient({ baseUrl: backend.url });
    await expect(api.me('t')).rejects.toThrow(/not JSON/);
    await backend.close();
    await expect(api.me('t')).rejects.toBeInstanceOf(ApiUnreachableError);
    await expect(api.me('t')).rejects.toThrow(/Cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  });

  it('refuses a base URL that is not http(s)', () => {
    expect(() => new ApiClient({ baseUrl: 'ftp://example.com' })).toThrow(/http\(s\)/);
    expect(() => new ApiClient({ baseUrl: 'not a url' })).toThrow(/Not a URL/);
  });
});

describe('normalizeBaseUrl: the backend, or the one meant', () => {
  const refusal = (input: string) => {
    try {
      normalizeBaseUrl(input);
    } catch (err) {
      return { message: (err as CliError).message, exitCode: (err as CliError).exitCode };
    }
    throw new Error(`${input} was accepted`);
  };

  it.each([
    ['http://localhost:3000/', 'http://localhost:3000'],
    ['  https://id.example.com  ', 'https://id.example.com'],
    // A server may be served under a prefix of its own: any path that is not one of the service's is kept.
    ['https://corp.example/prospect/', 'https://corp.example/prospect'],
    ['https://corp.example/tools/prospect', 'https://corp.example/tools/prospect'],
  ])('takes %j as %j', (input, base) => {
    expect(normalizeBaseUrl(input)).toBe(base);
  });

  it.each([
    ['localhost:3000', 'http://localhost:3000'],
    ['localhost', 'http://localhost'],
    ['127.0.0.1:3000/', 'http://127.0.0.1:3000'],
    ['[::1]:3000', 'http://[::1]:3000'],
    ['api.localhost:8080', 'http://api.localhost:8080'],
    ['id.example.com', 'https://id.example.com'],
    ['id.example.com:80', 'https://id.example.com:80'],
    ['10.0.0.5:3000', 'https://10.0.0.5:3000'],
    ['localhost:3000/api', 'http://localhost:3000'],
  ])('%j, without a scheme: "did you mean %s?", a usage error', (input, meant) => {
    expect(refusal(input)).toEqual({ message: `${JSON.stringify(input)} has no scheme: did you mean ${meant}?`, exitCode: EXIT.usage });
  });

  it.each([
    ['http://localhost:3000/api', 'http://localhost:3000'],
    ['http://localhost:3000/api/', 'http://localhost:3000'],
    ['http://localhost:3000/api/cli/auth/me', 'http://localhost:3000'],
    ['http://localhost:3000/device?user_code=BCDF-GHJK', 'http://localhost:3000'],
    ['http://localhost:3000/settings/tokens', 'http://localhost:3000'],
    ['https://id.example.com/.well-known/oauth-authorization-server', 'https://id.example.com'],
    ['https://corp.example/prospect/api', 'https://corp.example/prospect'],
  ])('%j, a path of the service rather than its base: "did you mean %s?", a usage error', (input, base) => {
    const given = input.replace(/[?].*$/, '').replace(/\/+$/, '');
    expect(refusal(input)).toEqual({ message: `${given} is a path of the Prospect service, not its base URL: did you mean ${base}?`, exitCode: EXIT.usage });
  });

  it('still refuses what is not an http(s) URL, naming what it is', () => {
    expect(refusal('ftp://example.com')).toEqual({ message: 'The backend must be an http(s) URL, not ftp:', exitCode: EXIT.usage });
    expect(refusal('mailto:ada@example.com')).toEqual({ message: 'The backend must be an http(s) URL, not mailto:', exitCode: EXIT.usage });
    expect(refusal('not a url')).toEqual({ message: 'Not a URL: "not a url".', exitCode: EXIT.usage });
    expect(refusal('')).toEqual({ message: 'Not a URL: "".', exitCode: EXIT.usage });
  });
});

describe('loginCommandLine: the one place every "run prospect auth:login" hint comes from', () => {
  it('is the bare command for no backend and for the default one', () => {
    expect(loginCommandLine()).toBe('prospect auth:login');
    expect(loginCommandLine('http://localhost:3000')).toBe('prospect auth:login');
    expect(loginCommandLine('http://localhost:3000/')).toBe('prospect auth:login');
    expect(loginCommandLine('http://localhost:3000', { env: { PROSPECT_API_BASE_URL: 'http://localhost:3000/' } })).toBe('prospect auth:login');
  });

  it('names any other backend with --api-url, and adds --token - when asked', () => {
    expect(loginCommandLine('https://id.example.com')).toBe('prospect auth:login --api-url https://id.example.com');
    expect(loginCommandLine('https://id.example.com/', { token: true })).toBe('prospect auth:login --api-url https://id.example.com --token -');
    expect(loginCommandLine('http://localhost:3000', { token: true })).toBe('prospect auth:login --token -');
  });

  it('names the default backend too when PROSPECT_API_BASE_URL would send a bare command elsewhere', () => {
    expect(loginCommandLine('http://localhost:3000', { env: { PROSPECT_API_BASE_URL: 'https://id.example.com' } })).toBe(
      'prospect auth:login --api-url http://localhost:3000',
    );
    expect(loginCommandLine('https://id.example.com', { env: { PROSPECT_API_BASE_URL: 'https://id.example.com' } })).toBe(
      'prospect auth:login --api-url https://id.example.com',
    );
  });

  it('quotes a backend the shell would split, and never throws for one that is not a URL', () => {
    expect(loginCommandLine("https://example.com/it's&x")).toBe("prospect auth:login --api-url 'https://example.com/it'\\''s&x'");
    expect(loginCommandLine('not a url')).toBe("prospect auth:login --api-url 'not a url'");
  });
});

describe('ApiClient.request with extra headers (prospect api -H)', () => {
  it('sends them, lets them replace a default, sends a repeated name with both values, and never lets one replace the token', async () => {
    const backend = await fakeBackend({ 'GET /x': (_req, _b, res) => json(res, 200, { ok: true }) });
    try {
      const res = await new ApiClient({ baseUrl: backend.url }).request('GET', '/x', {
        token: 'prs_token',
        headers: [
          ['X-Trace', 'one'],
          ['x-trace', 'two'],
          ['Accept', 'application/vnd.prospect+json'],
          ['Authorization', 'Bearer prs_other'],
        ],
      });
      expect(res).toMatchObject({ status: 200, statusText: 'OK', body: { ok: true } });
      expect(backend.requests[0]!.headers).toMatchObject({ 'x-trace': 'one, two', accept: 'application/vnd.prospect+json', authorization: 'Bearer prs_token' });
    } finally {
      await backend.close();
    }
  });

  it('sends only its own headers when none are given', async () => {
    const backend = await fakeBackend({ 'GET /x': (_req, _b, res) => json(res, 200, { ok: true }) });
    try {
      await new ApiClient({ baseUrl: backend.url }).request('GET', '/x');
      expect(backend.requests[0]!.headers).toMatchObject({ accept: 'application/json', 'user-agent': expect.stringMatching(/^prospect-cli\//) });
      expect(backend.requests[0]!.headers.authorization).toBeUndefined();
    } finally {
      await backend.close();
    }
  });
});
