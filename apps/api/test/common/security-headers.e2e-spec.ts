import { ROUTES } from '@prospect/contract';
import { authorizedPoll, createUser } from '../support/fixtures.js';
import { get, post, request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Every answer carries the headers an API needs (OWASP's REST set); pages add
 * what a browser document needs; answers holding a secret are never cached.
 */
describe('security headers', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp();
  });
  afterAll(() => api.close());

  const apiHeaders = (headers: Headers) => ({
    'x-content-type-options': headers.get('x-content-type-options'),
    'content-security-policy': headers.get('content-security-policy'),
  });
  const API_HEADERS = { 'x-content-type-options': 'nosniff', 'content-security-policy': "frame-ancestors 'none'" };
  const PAGE_ONLY = ['x-frame-options', 'referrer-policy', 'cross-origin-opener-policy', 'cross-origin-resource-policy'];

  it('are on every JSON answer, errors and unknown routes included, without the page-only ones', async () => {
    const answers = [
      await post(api, ROUTES.deviceStart, {}),
      await post(api, ROUTES.devicePoll, { deviceCode: 'nope' }),
      await get(api, ROUTES.me),
      await get(api, '/api/nothing-here'),
      await get(api, ROUTES.health),
    ];
    for (const res of answers) {
      expect(apiHeaders(res.headers)).toEqual(API_HEADERS);
      for (const name of PAGE_ONLY) expect(res.headers.get(name)).toBeNull();
      expect(res.headers.get('strict-transport-security')).toBeNull(); // plain http here
      // Express's defaults, off on purpose: no advertising the framework, no hashing every body for an ETag.
      expect(res.headers.get('x-powered-by')).toBeNull();
      expect(res.headers.get('etag')).toBeNull();
    }
  });

  it('forbid caching every answer that carries a secret or a person (RFC 6749 §5.1)', async () => {
    const authorized = await authorizedPoll(api, await createUser(api));
    const issued = await post(api, ROUTES.issueToken, {}, authorized.body.accessToken);
    expect(issued.status).toBe(201);
    const me = await get(api, ROUTES.me, authorized.body.accessToken);
    expect(me.status).toBe(200);
    const started = await post(api, ROUTES.deviceStart, {});
    for (const res of [started, authorized, issued, me]) expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('give pages a document policy: own scripts and styles only, no framing, no caching', async () => {
    const page = await request(api, 'GET', ROUTES.login);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('x-permitted-cross-domain-policies')).toBe('none');
    expect(page.headers.get('origin-agent-cluster')).toBe('?1');
    // Upgrading http: addresses on plain http would break every form post.
    expect(csp).not.toContain('upgrade-insecure-requests');
  });

  it('have pages served over https (here through a TLS terminator on this machine) upgrade http: addresses', async () => {
    const page = await request(api, 'GET', ROUTES.login, { headers: { 'x-forwarded-proto': 'https' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain('upgrade-insecure-requests');
  });

  it('believe X-Forwarded-Proto only from the proxies TRUST_PROXY names', async () => {
    const untrusting = await startTestApp({ env: { TRUST_PROXY: 'false' } });
    try {
      const page = await request(untrusting, 'GET', ROUTES.login, { headers: { 'x-forwarded-proto': 'https' } });
      expect(page.headers.get('content-security-policy')).not.toContain('upgrade-insecure-requests');
    } finally {
      await untrusting.close();
    }
  });

  it('add HSTS when people reach the service over https', async () => {
    const secure = await startTestApp({ env: { PUBLIC_URL: 'https://prospect.example.com' } });
    try {
      const res = await get(secure, ROUTES.health);
      expect(res.headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains');
    } finally {
      await secure.close();
    }
  });
});
