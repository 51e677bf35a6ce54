import { randomUUID } from 'node:crypto';
import { domainToUnicode } from 'node:url';
import { ROUTES } from '@prospect/contract';
import { malformedQueryMessage } from '../../src/common/well-formed-text.js';
import { MetricsServer } from '../../src/metrics/metrics-server.js';
import { everyAccount } from '../support/account-fixtures.js';
import { clientById } from '../support/client-fixtures.js';
import { approve, createUser, poll, startDeviceLogin, userById } from '../support/fixtures.js';
import { eventually } from '../support/eventually.js';
import { get, post, request } from '../support/http.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { signInAs, webClient, type WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const HTML = { accept: 'text/html' };

/** Every GET route the Express router holds (the Nest controllers' and the pages'), as `/a/:id` paths. */
function getRoutes(api: TestApp): string[] {
  const { router } = api.app.getHttpAdapter().getInstance() as unknown as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } };
  const paths = router.stack.filter((layer) => layer.route?.methods.get).map((layer) => layer.route!.path);
  return [...new Set(paths)].sort();
}

/** A device login that asked for `admin`, approved by `user`: a token the admin API takes. */
async function adminTokenOf(api: TestApp, user: { id: string }): Promise<string> {
  const start = await startDeviceLogin(api, { clientName: 'prospect CLI', hostname: 'laptop', scopes: ['profile', 'tokens', 'admin'] });
  await approve(api, start.userCode, user);
  const res = await poll(api, start.deviceCode);
  expect(res.body.status).toBe('authorized');
  return res.body.accessToken as string;
}

/** A route's path with every `:param` filled in. */
const filled = (path: string) => path.replace(/:\w+/g, randomUUID());

/**
 * Input hygiene (issue #31, item 7): one validator for e-mail addresses at every door, no
 * invisible characters in names, no NUL or bytes that are not UTF-8 in any query string, and
 * the metrics port on loopback unless asked.
 */
describe('input hygiene', () => {
  let smtp: SmtpSink;
  let api: TestApp;
  let admin: { id: string; email: string };
  let adminToken: string;
  let adminWeb: WebClient;
  beforeAll(async () => {
    ({ api, smtp } = await startAppWithMail());
    admin = await createUser(api, { role: 'admin' });
    adminToken = await adminTokenOf(api, admin);
    adminWeb = await signInAs(api, admin.email, PASSWORD);
  });
  afterAll(() => api?.close());

  /** How many accounts have an address that `matches` (letter case as stored). */
  const userCount = async (matches: (email: string) => boolean) => (await everyAccount(api)).filter((account) => matches(account.email)).length;

  describe('a NUL or bytes that are not UTF-8 in a query string', () => {
    it('GET /api/admin/users?q=%00 is a 400 with the one error body (it was a 500 from Postgres)', async () => {
      expect((await get(api, '/api/admin/users?q=ok', adminToken)).status).toBe(200); // the token reaches the route
      const res = await get(api, '/api/admin/users?q=%00', adminToken);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ statusCode: 400, error: 'invalid_request', message: malformedQueryMessage('q') });
      expect(res.headers.get('content-type')).toContain('application/json');
    });

    it('refuses it on every /api/admin GET route of the OpenAPI document, in each parameter it declares and in any other', async () => {
      const document = (await get(api, '/api/docs-json')).body as { paths: Record<string, { get?: { parameters?: Array<{ name: string; in: string }> } }> };
      const routes = Object.entries(document.paths).filter(([path, operations]) => path.startsWith('/api/admin/') && operations.get);
      expect(routes.map(([path]) => path)).toEqual(expect.arrayContaining(['/api/admin/users', '/api/admin/users/{id}', '/api/admin/clients']));
      for (const [path, operations] of routes) {
        const names = [...(operations.get!.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name), 'anything'];
        for (const name of names) {
          for (const bad of ['%00', 'a%00b', '%FF', '%C0%80', '%ED%A0%80']) {
            const res = await get(api, `${path.replace(/\{\w+\}/g, randomUUID())}?${name}=${bad}`, adminToken);
            expect([path, name, bad, res.status]).toEqual([path, name, bad, 400]);
            expect(res.body).toEqual({ statusCode: 400, error: 'invalid_request', message: malformedQueryMessage(name) });
          }
        }
      }
    });

    it('refuses it on every GET route the router holds, API, OAuth and pages alike, so a route added later is covered', async () => {
      const routes = getRoutes(api);
      // The enumeration sees what it must: admin API routes and the pages with a query.
      expect(routes).toEqual(expect.arrayContaining(['/api/admin/users', '/api/admin/users/:id', '/api/admin/clients', '/admin/users', '/device', '/login', '/verify-email']));
      for (const route of routes) {
        const path = `${filled(route)}?x=1&next=%00`;
        const page = !route.startsWith('/api/') && !route.startsWith('/oauth/') && !route.startsWith('/.well-known/');
        const res = page ? await adminWeb.send('GET', path, undefined, HTML) : await request(api, 'GET', path, { token: adminToken });
        expect([route, res.status]).toEqual([route, 400]);
        if (page) expect((res as { text: string }).text).toContain(malformedQueryMessage('next'));
        // The one error body (OAuth's adds error_description).
        else expect((res as { body: unknown }).body).toMatchObject({ statusCode: 400, error: 'invalid_request', message: malformedQueryMessage('next') });
      }
    });

    it.each([
      ['/admin/users?q=', 'q'],
      ['/admin/users?page=1&q=', 'q'],
      ['/admin/clients?x=', 'x'],
      ['/device?user_code=', 'user_code'],
      ['/login?next=', 'next'],
      ['/signup?next=', 'next'],
      ['/verify-email?token=', 'token'],
      ['/password/reset?token=', 'token'],
      ['/invitation?token=', 'token'],
      ['/email-change?token=', 'token'],
    ])('%s%%00 is a 400 page naming the parameter, for a signed-in admin and anyone', async (prefix, name) => {
      for (const web of [adminWeb, webClient(api)]) {
        for (const bad of ['%00', 'ok%00', '%FF', '%E2%82']) {
          const res = await web.send('GET', `${prefix}${bad}`, undefined, HTML);
          expect(res.status).toBe(400);
          expect(res.headers['content-type']).toContain('text/html');
          expect(res.text).toContain('That did not work');
          expect(res.text).toContain(malformedQueryMessage(name));
        }
      }
    });

    it('refuses it in a parameter name, and leaves good text alone', async () => {
      expect((await get(api, '/api/admin/users?q%00=x', adminToken)).body).toEqual({ statusCode: 400, error: 'invalid_request', message: malformedQueryMessage('(a parameter name)') });
      // Text that is UTF-8 (ü, an emoji) and a stray % are searched for as they are.
      const person = await createUser(api, { name: 'Jürgen 🚀 100%' });
      for (const q of ['J%C3%BCrgen', '%F0%9F%9A%80', '100%']) {
        const found = await get(api, `/api/admin/users?q=${q}`, adminToken);
        expect(found.status).toBe(200);
        expect(found.body.users.map((u: { id: string }) => u.id)).toContain(person.id);
      }
    });
  });

  describe('e-mail addresses: the practical RFC 5321 subset at every door', () => {
    const BAD = ['x<victim@example.com>', 'Eve <victim2@example.com>', '"eve victim"@example.com', 'eve@[192.0.2.1]', 'e..ve@example.com', 'ad\u200bmin@example.com', 'victim3@example.com,eve@example.com'];

    async function formOf(web: WebClient, path: string) {
      const page = await web.send('GET', path);
      expect(page.status).toBe(200);
      return web.csrfFrom(page.text);
    }

    it('sign-up refuses them with the form again, and creates nothing', async () => {
      for (const email of BAD) {
        const web = webClient(api);
        const res = await web.send('POST', '/signup', { _csrf: await formOf(web, '/signup'), name: 'Eve', email, password: PASSWORD });
        expect([email, res.status]).toEqual([email, 400]);
        expect(res.text).toContain('Please enter a valid e-mail address');
      }
      expect(await userCount((email) => email.includes('victim'))).toBe(0);
      expect(smtp.mails.filter((mail) => mail.to.some((to) => to.includes('victim')))).toEqual([]);
    });

    it('the password reset, the address change and the admin invitation page refuse them', async () => {
      const person = await createUser(api);
      const owner = await signInAs(api, person.email, PASSWORD);
      for (const email of BAD) {
        const anyone = webClient(api);
        const forgot = await anyone.send('POST', '/password/forgot', { _csrf: await formOf(anyone, '/password/forgot'), email });
        expect([email, forgot.status]).toEqual([email, 400]);
        expect(forgot.text).toContain('Please enter a valid e-mail address');

        const change = await owner.send('POST', '/settings/account/email', { _csrf: await formOf(owner, '/settings/account'), email, password: PASSWORD });
        expect([email, change.status]).toEqual([email, 400]);
        expect(change.text).toContain('Please enter a valid e-mail address');

        const invite = await adminWeb.send('POST', '/admin/users/invite', { _csrf: await formOf(adminWeb, '/admin/users'), name: 'Eve', email });
        expect([email, invite.status]).toEqual([email, 400]);
        expect(invite.text).toContain('Please enter a valid e-mail address');
      }
      expect(await userCount((email) => email.includes('victim'))).toBe(0);
      expect(smtp.mails.filter((mail) => mail.to.some((to) => to.includes('victim')))).toEqual([]);
    });

    it('the admin API (invitation) and token issuance (userEmail) refuse them with a 400 naming the field', async () => {
      for (const email of BAD) {
        const invite = await post(api, '/api/admin/users', { email, name: 'Eve' }, adminToken);
        expect([email, invite.status]).toEqual([email, 400]);
        expect(invite.body).toEqual({ statusCode: 400, error: 'invalid_request', message: expect.stringMatching(/^Invalid email: must be an e-mail address/) });
        const issued = await post(api, ROUTES.issueToken, { userEmail: email }, adminToken);
        expect([email, issued.status]).toEqual([email, 400]);
        expect(issued.body.message).toMatch(/^Invalid userEmail: must be an e-mail address/);
      }
      expect(await userCount((email) => email.includes('victim'))).toBe(0);
    });

    it('stores an accepted address as the one the mail is delivered to (sign-up and invitation)', async () => {
      /** The one mail sent to `address`: its envelope recipients and its To header, as they went over SMTP. */
      const mailTo = async (address: string) => {
        // smtp-server hands over an international domain in its Unicode form (RCPT TO carried the xn-- one).
        const [local, domain] = address.split('@') as [string, string];
        const received = `${local}@${domainToUnicode(domain)}`;
        expect(await eventually(() => smtp.to(received).length === 1)).toBe(true);
        const mail = smtp.to(received)[0]!;
        return { envelope: mail.to, header: /^To: (.*)$/m.exec(mail.raw)?.[1]?.trim() };
      };

      const typed = `O'Brien+ci{${Date.now()}}@Mail.Example.com`;
      const web = webClient(api);
      const signedUp = await web.send('POST', '/signup', { _csrf: await formOf(web, '/signup'), name: 'Pat', email: typed, password: PASSWORD });
      expect(signedUp.status).toBe(200); // "Check your e-mail"
      const stored = typed.toLowerCase();
      expect(await userCount((email) => email === stored)).toBe(1);
      expect(await mailTo(stored)).toEqual({ envelope: [stored], header: stored });

      const invited = `ivy.${Date.now()}@xn--bcher-kva.example`;
      const res = await post(api, '/api/admin/users', { email: invited, name: 'Ivy' }, adminToken);
      expect(res.status).toBe(201);
      expect(res.body.email).toBe(invited);
      expect(await mailTo(invited)).toEqual({ envelope: [invited.replace('xn--bcher-kva', 'bücher')], header: invited });
    });
  });

  describe('names and labels: no invisible or control characters', () => {
    const INVISIBLE = ['ad\u200bmin', 'ad\u200dmin', 'ad\u200emin', 'ad\u2060min', 'ad\ufeffmin', 'ad\u202emin', 'ad\u2066min', 'ad\u00admin'];

    it('sign-up, rename, the invitation page and the tokens and clients pages refuse them', async () => {
      const person = await createUser(api);
      const owner = await signInAs(api, person.email, PASSWORD);
      for (const name of INVISIBLE) {
        const anyone = webClient(api);
        const page = await anyone.send('GET', '/signup');
        const signup = await anyone.send('POST', '/signup', { _csrf: anyone.csrfFrom(page.text), name, email: `n${randomUUID()}@example.com`, password: PASSWORD });
        expect([name, signup.status]).toEqual([name, 400]);

        const account = await owner.send('GET', '/settings/account');
        const rename = await owner.send('POST', '/settings/account/name', { _csrf: owner.csrfFrom(account.text), name });
        expect([name, rename.status]).toEqual([name, 400]);

        const users = await adminWeb.send('GET', '/admin/users');
        const invite = await adminWeb.send('POST', '/admin/users/invite', { _csrf: adminWeb.csrfFrom(users.text), name, email: `n${randomUUID()}@example.com` });
        expect([name, invite.status]).toEqual([name, 400]);

        const tokens = await owner.send('GET', '/settings/tokens');
        const label = await owner.send('POST', '/settings/tokens', { _csrf: owner.csrfFrom(tokens.text), label: name, expires_in_days: '30' });
        expect([name, label.status]).toEqual([name, 400]);

        const clients = await adminWeb.send('GET', '/admin/clients');
        const client = await adminWeb.send('POST', '/admin/clients', { _csrf: adminWeb.csrfFrom(clients.text), id: 'acme-sync', name, scopes: 'profile' });
        expect([name, client.status]).toEqual([name, 400]);
      }
      expect((await everyAccount(api)).filter((account) => /^ad.*min$/s.test(account.name))).toEqual([]);
      expect(await clientById(api, 'acme-sync')).toBeNull();
    });

    it('the JSON API refuses them in invitations, token labels, client names and device logins, naming the field', async () => {
      const cases: Array<[string, (text: string) => Promise<{ status: number; body: { message: string } }>]> = [
        ['name', (text) => post(api, '/api/admin/users', { email: `n${randomUUID()}@example.com`, name: text }, adminToken)],
        ['label', (text) => post(api, ROUTES.issueToken, { label: text }, adminToken)],
        ['name', (text) => post(api, '/api/admin/clients', { id: 'acme-sync', name: text, allowedScopes: ['profile'] }, adminToken)],
        ['clientName', (text) => post(api, ROUTES.deviceStart, { clientName: text })],
        ['hostname', (text) => post(api, ROUTES.deviceStart, { hostname: text })],
      ];
      for (const text of INVISIBLE) {
        for (const [field, send] of cases) {
          const res = await send(text);
          expect([field, text, res.status]).toEqual([field, text, 400]);
          expect(res.body.message).toBe(`Invalid ${field}: it contains control characters, invisible characters or bidirectional text controls.`);
        }
      }
    });

    it('keeps the joiners and direction marks scripts need, between their letters', async () => {
      const person = await createUser(api);
      const owner = await signInAs(api, person.email, PASSWORD);
      for (const name of ['رحیم\u200cزاده', 'עברית\u200f CLI', 'Ada 👩\u200d💻']) {
        const account = await owner.send('GET', '/settings/account');
        const rename = await owner.send('POST', '/settings/account/name', { _csrf: owner.csrfFrom(account.text), name });
        expect([name, rename.status]).toEqual([name, 303]);
        expect((await userById(api, person.id))!.name).toBe(name);
      }
    });
  });

  describe('METRICS_HOST', () => {
    it('serves the metrics on loopback by default, whatever HOST says, and on every interface only when asked', async () => {
      const quiet = await startTestApp({ database: api.database, env: { METRICS_PORT: '0', HOST: '0.0.0.0' } });
      try {
        expect(quiet.config.metricsHost).toBe('127.0.0.1');
        expect(quiet.app.get(MetricsServer).address).toBe('127.0.0.1');
      } finally {
        await quiet.close();
      }
      const open = await startTestApp({ database: api.database, env: { METRICS_PORT: '0', METRICS_HOST: '0.0.0.0' } });
      try {
        expect(open.app.get(MetricsServer).address).toBe('0.0.0.0');
        const metrics = await fetch(`http://127.0.0.1:${open.app.get(MetricsServer).port}/metrics`);
        expect(metrics.status).toBe(200);
      } finally {
        await open.close();
      }
    });
  });
});
