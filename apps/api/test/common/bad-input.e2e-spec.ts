import { ROUTES } from '@prospect/contract';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { deviceLogins } from '../support/device-login-fixtures.js';
import { countAuthEvents, createUser } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** Garbage in gets a 4xx with the one error body: never a 500, never a stack trace. */
describe('bad input', () => {
  let api: TestApp;
  let token: string;
  beforeAll(async () => {
    api = await startTestApp();
    const user = await createUser(api);
    token = (await api.app.get(TokensService).issue({ userId: user.id, origin: 'direct' })).accessToken;
  });
  afterAll(() => api.close());

  const json = { 'content-type': 'application/json' };
  /** Device logins and audit events: what a refused start, poll or token would have written. */
  const written = async () => (await deviceLogins(api)).length + (await countAuthEvents(api, {}));

  it.each<[string, string, string, { body?: string; headers?: Record<string, string> }, number]>([
    ['start: wrong type', 'POST', ROUTES.deviceStart, { body: '{"clientName": 42}', headers: json }, 400],
    ['start: extra field', 'POST', ROUTES.deviceStart, { body: '{"clientName": "x", "admin": true}', headers: json }, 400],
    ['start: array body', 'POST', ROUTES.deviceStart, { body: '[1,2]', headers: json }, 400],
    ['start: null clientName', 'POST', ROUTES.deviceStart, { body: '{"clientName": null}', headers: json }, 400],
    ['start: 300-character hostname', 'POST', ROUTES.deviceStart, { body: JSON.stringify({ hostname: 'h'.repeat(300) }), headers: json }, 400],
    ['start: broken JSON', 'POST', ROUTES.deviceStart, { body: '{"clientName": ', headers: json }, 400],
    ['start: huge body', 'POST', ROUTES.deviceStart, { body: JSON.stringify({ clientName: 'x'.repeat(20_000) }), headers: json }, 413],
    ['poll: missing deviceCode', 'POST', ROUTES.devicePoll, { body: '{}', headers: json }, 400],
    ['poll: no body', 'POST', ROUTES.devicePoll, {}, 400],
    ['poll: numeric deviceCode', 'POST', ROUTES.devicePoll, { body: '{"deviceCode": 12345}', headers: json }, 400],
    ['poll: object deviceCode', 'POST', ROUTES.devicePoll, { body: '{"deviceCode": {"$ne": null}}', headers: json }, 400],
    ['poll: 10,000-character deviceCode', 'POST', ROUTES.devicePoll, { body: JSON.stringify({ deviceCode: 'a'.repeat(10_000) }), headers: json }, 400],
    ['poll: extra field', 'POST', ROUTES.devicePoll, { body: '{"deviceCode": "x", "status": "authorized"}', headers: json }, 400],
    ['poll: broken JSON', 'POST', ROUTES.devicePoll, { body: '{deviceCode:', headers: json }, 400],
    ['poll: JSON string body', 'POST', ROUTES.devicePoll, { body: '"prsd_x"', headers: json }, 400],
    ['poll: __proto__ key', 'POST', ROUTES.devicePoll, { body: '{"__proto__": {"x": 1}, "deviceCode": "x"}', headers: json }, 400],
    ['poll: XML body', 'POST', ROUTES.devicePoll, { body: '<deviceCode>x</deviceCode>', headers: { 'content-type': 'application/xml' } }, 415],
    ['poll: form body', 'POST', ROUTES.devicePoll, { body: 'deviceCode=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 415],
    ['me: empty bearer (sent as the bare scheme)', 'GET', ROUTES.me, { headers: { authorization: 'Bearer ' } }, 400],
    ['me: empty header', 'GET', ROUTES.me, { headers: { authorization: '' } }, 401],
    ['me: scheme only', 'GET', ROUTES.me, { headers: { authorization: 'Bearer' } }, 400],
    ['me: wrong scheme', 'GET', ROUTES.me, { headers: { authorization: 'Basic dXNlcjpwYXNz' } }, 401],
    ['me: three parts', 'GET', ROUTES.me, { headers: { authorization: 'Bearer a b' } }, 400],
    ['me: the token in the address (RFC 6750 §2.3)', 'GET', `${ROUTES.me}?access_token=prs_${'a'.repeat(43)}`, {}, 400],
    ['token: the token in the body (RFC 6750 §2.2)', 'POST', ROUTES.issueToken, { body: `{"access_token": "prs_${'a'.repeat(43)}"}`, headers: json }, 400],
    ['me: 10,000-character token', 'GET', ROUTES.me, { headers: { authorization: `Bearer prs_${'a'.repeat(10_000)}` } }, 401],
    ['me: wrong prefix', 'GET', ROUTES.me, { headers: { authorization: `Bearer ghp_${'a'.repeat(43)}` } }, 401],
    ['me: right prefix, bad characters', 'GET', ROUTES.me, { headers: { authorization: `Bearer prs_${'%'.repeat(43)}` } }, 401],
    ['token: negative lifetime', 'POST', ROUTES.issueToken, { body: '{"expiresInSeconds": -1}', headers: json }, 400],
    ['token: fractional lifetime', 'POST', ROUTES.issueToken, { body: '{"expiresInSeconds": 1.5}', headers: json }, 400],
    ['token: string lifetime', 'POST', ROUTES.issueToken, { body: '{"expiresInSeconds": "60"}', headers: json }, 400],
    ['token: extra field', 'POST', ROUTES.issueToken, { body: '{"role": "admin"}', headers: json }, 400],
    ['unknown route', 'GET', '/api/cli/auth/nothing', {}, 404],
    ['wrong method', 'DELETE', ROUTES.me, {}, 405],
    ['null body', 'POST', ROUTES.devicePoll, { body: 'null', headers: json }, 400],
  ])('%s', async (_, method, path, { body, headers }, status) => {
    const authHeaders: Record<string, string> = path === ROUTES.issueToken ? { authorization: `Bearer ${token}` } : {};
    const res = await request(api, method, path, { body, headers: { ...authHeaders, ...headers } });
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ statusCode: status, error: expect.any(String), message: expect.any(String) });
    expect(res.body.message).not.toMatch(/\bat .+\.(js|ts):\d+/); // no stack trace
    expect(res.headers.get('content-type')).toContain('application/json');
  });

  it.each<[string, string, string]>([
    ['start: NUL in clientName', ROUTES.deviceStart, '{"clientName": "cli\\u0000name"}'],
    ['start: an unpaired surrogate in hostname', ROUTES.deviceStart, '{"hostname": "\\ud800"}'],
    ['poll: NUL in deviceCode', ROUTES.devicePoll, '{"deviceCode": "prsd_\\u0000"}'],
    ['token: NUL in label', ROUTES.issueToken, '{"label": "ci\\u0000"}'],
    ['token: an unpaired surrogate in userEmail', ROUTES.issueToken, '{"userEmail": "a\\udc00@example.com"}'],
    ['token: NUL in a field name', ROUTES.issueToken, '{"la\\u0000bel": "x"}'],
  ])('%s: 400 naming the field, and nothing written', async (_, path, body) => {
    const before = await written();
    const res = await request(api, 'POST', path, { body, headers: { ...json, authorization: `Bearer ${token}` } });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^Invalid (clientName|hostname|deviceCode|label|userEmail|\(a field name\)): it contains a NUL character or broken Unicode/);
    expect(await written()).toBe(before);
  });

  const brackets = '['.repeat(8_000) + ']'.repeat(8_000); // 16,000 bytes
  const objects = '{"a":'.repeat(2_500) + '1' + '}'.repeat(2_500);
  it.each<[string, string, string]>([
    ['8,000 nested arrays to a route', ROUTES.deviceStart, brackets],
    ['8,000 nested arrays to an unknown API path', '/api/cli/auth/nothing', brackets],
    ['8,000 nested arrays to an unknown page path', '/nothing', brackets],
    ['2,500 nested objects to a route', ROUTES.devicePoll, objects],
    ['33 nested arrays to a route with a bearer token', ROUTES.issueToken, '['.repeat(33) + ']'.repeat(33)],
  ])('%s: 400 naming the depth limit, before anything else reads it', async (_, path, body) => {
    const res = await request(api, 'POST', path, { body, headers: { ...json, authorization: `Bearer ${token}` } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ statusCode: 400, error: 'invalid_request', message: 'The request body nests more than 32 levels deep.' });
  });

  it('names the problem in the message', async () => {
    const missing = await request(api, 'POST', ROUTES.devicePoll, { json: {} });
    expect(missing.body.message).toBe('Missing field: deviceCode.');
    const extra = await request(api, 'POST', ROUTES.devicePoll, { json: { deviceCode: 'x', status: 'authorized' } });
    expect(extra.body.message).toBe('Unknown field: status.');
    const broken = await request(api, 'POST', ROUTES.devicePoll, { body: '{', headers: json });
    expect(broken.body.message).toBe('The request body is not valid JSON.');
    const wrongType = await request(api, 'POST', ROUTES.devicePoll, { json: { deviceCode: 12345 } });
    expect(wrongType.body.message).toBe('deviceCode must be a string.');
    const wrongMethod = await request(api, 'DELETE', ROUTES.me);
    expect(wrongMethod.body).toEqual({ statusCode: 405, error: 'method_not_allowed', message: 'DELETE is not allowed here; use GET or HEAD.' });
    expect(wrongMethod.headers.get('allow')).toBe('GET, HEAD');
    const xml = await request(api, 'POST', ROUTES.devicePoll, { body: '<x/>', headers: { 'content-type': 'application/xml' } });
    expect(xml.body.message).toBe('Unsupported Content-Type: send application/json.');
    const huge = await request(api, 'POST', ROUTES.deviceStart, { body: JSON.stringify({ clientName: 'x'.repeat(20_000) }), headers: json });
    expect(huge.body.message).toBe('The request body is too large.');
  });
});
