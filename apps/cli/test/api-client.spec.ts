import { ApiClient, ApiHttpError, ApiUnreachableError, normalizeMeResponse } from '../src/api-client/api-client.js';
import { CliError } from '../src/errors.js';
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
