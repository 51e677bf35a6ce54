import { ROUTES } from '@prospect/contract';
import { hashSessionId } from '../../src/web-sessions/hashed-session-store.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { UsersService } from '../../src/users/users.service.js';
import { FakeClock } from '../support/fake-clock.js';
import { everyAccount, giveLegacyPassword } from '../support/account-fixtures.js';
import { enrolTotp } from '../support/account-flows.js';
import { createUser, poll, startDeviceLogin, userByEmail } from '../support/fixtures.js';
import { client } from '../support/http.js';
import { accessTokens } from '../support/token-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { csrfFrom, signInAs, webClient } from '../support/web-client.js';
import { countWebSessions, countWebSessionWrites, moveWebSessionExpiry, rowLockWaitReached, sessionsEndingOf, webSessionSecondsLeft } from '../support/web-session-fixtures.js';

describe('web pages over HTTP', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp();
  });
  afterAll(() => api.close());

  async function signedIn(email = `p${Date.now()}${Math.random()}@example.com`) {
    const web = webClient(api);
    const form = await web.send('GET', '/signup');
    const res = await web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), name: 'P', email, password: 'correct horse' });
    expect(res.status).toBe(303);
    return web;
  }

  it('tells a duplicate e-mail in another letter case, keeping what was typed', async () => {
    await signedIn('Dup@Example.com');
    const web = webClient(api);
    const form = await web.send('GET', '/signup');
    const res = await web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), name: 'Again', email: 'dUP@example.COM', password: 'correct horse' });
    expect(res.status).toBe(409);
    expect(res.text).toContain('An account with this e-mail address already exists');
    expect(res.text).toContain('value="Again"');
  });

  it.each([
    [{ name: '', email: 'a@b.co', password: 'correct horse' }, 400, 'Please enter your name'],
    [{ name: 'A', email: 'not-an-email', password: 'correct horse' }, 400, 'valid e-mail'],
    [{ name: 'A', email: 'a@b.co', password: 'short' }, 400, 'at least 8 characters'],
    [{ name: '<script>x</script>', email: 'x', password: '' }, 400, '&lt;script&gt;'],
  ])('refuses a bad sign-up with a clear message (%j)', async (fields, status, message) => {
    const web = webClient(api);
    const form = await web.send('GET', '/signup');
    const res = await web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), ...fields });
    expect(res.status).toBe(status);
    expect(res.text).toContain(message);
    expect(res.text).not.toContain('<script>x</script>');
  });

  it('refuses forms without their CSRF token', async () => {
    const web = webClient(api);
    await web.send('GET', '/login');
    expect((await web.send('POST', '/login', { email: 'a@b.co', password: 'x' })).status).toBe(403);
    const signed = await signedIn();
    expect((await signed.send('POST', '/settings/tokens', { label: 'x' })).status).toBe(403);
  });

  it('signs in with one generic message on failure, only redirects within the site, and signs out for real', async () => {
    const email = `login${Date.now()}@example.com`;
    const first = await signedIn(email);
    const web = webClient(api);
    const form = await web.send('GET', '/login?next=//evil.example.com');
    const bad = await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email, password: 'wrong password', next: '//evil.example.com' });
    expect(bad.status).toBe(401);
    expect(bad.text).toContain('do not match an account');
    const good = await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email: email.toUpperCase(), password: 'correct horse', next: '//evil.example.com' });
    expect(good.status).toBe(303);
    expect(good.location).toBe('/settings/tokens');
    // express-session signs the id (s:prsw_….signature); the table keeps only its SHA-256.
    expect(String(good.headers['set-cookie'])).toMatch(/prospect_session=s%3Aprsw_[^;]+;.*HttpOnly.*SameSite=Lax/i);

    const tokensPage = await first.send('GET', '/settings/tokens');
    const out = await first.send('POST', '/logout', { _csrf: first.csrfFrom(tokensPage.text) });
    expect(out.location).toBe('/login');
    expect((await first.send('GET', '/settings/tokens')).status).toBe(303);
    const person = (await userByEmail(api, email))!;
    expect(await countWebSessions(api, { userId: person.id })).toBe(1); // the other browser's session is still there; the signed-out one is gone
  });

  it.each([
    ['//evil.example.com', '/settings/tokens'],
    ['/\t/evil.example.com', '/settings/tokens'],
    ['/%09/evil.example.com', '/%09/evil.example.com'],
    ['/%5C/evil.example.com', '/%5C/evil.example.com'],
    ['/\\evil.example.com', '/settings/tokens'],
    ['/device?user_code=BCDF-GHJK\n', '/settings/tokens'],
    ['https://evil.example.com/device', '/settings/tokens'],
    ['/.//evil.example.com', '/settings/tokens'],
    ['/..//evil.example.com', '/settings/tokens'],
    ['/%2e%2e//evil.example.com', '/settings/tokens'],
    ['/device?user_code=BCDF-GHJK', '/device?user_code=BCDF-GHJK'],
  ])('after sign-in, goes to next=%j only on this site: %s', async (next, location) => {
    const email = `next${Date.now()}${Math.random()}@example.com`;
    await signedIn(email);
    const web = webClient(api);
    const form = await web.send('GET', '/login');
    const res = await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email, password: 'correct horse', next });
    expect(res.status).toBe(303);
    expect(res.location).toBe(location);
  });

  it('refuses form fields that cannot be stored as text with a 400 page, and names with control characters', async () => {
    const web = webClient(api);
    const form = await web.send('GET', '/signup');
    const nul = await web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), name: 'A\u0000B', email: 'nul@example.com', password: 'correct horse' }, { accept: 'text/html' });
    expect(nul.status).toBe(400);
    expect(nul.text).toContain('Invalid name: it contains a NUL character');
    const escape = await web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), name: 'Eve\u001b[31m', email: 'esc@example.com', password: 'correct horse' });
    expect(escape.status).toBe(400);
    expect(escape.text).toContain('Your name cannot contain control characters, invisible characters or bidirectional text controls.');
    const login = await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email: 'a\u0000@example.com', password: 'x' }, { accept: 'text/html' });
    expect(login.status).toBe(400);
  });

  it('replaces a password hash of the previous scheme with argon2id at the next sign-in', async () => {
    const email = `legacy${Date.now()}@example.com`;
    const user = await createUser(api, { email });
    await giveLegacyPassword(api, user.id, 'correct horse battery');
    const web = webClient(api);
    const form = await web.send('GET', '/login');
    expect((await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email, password: 'correct horse battery' })).status).toBe(303);
    // sql-on-purpose: the hash stored at rest is now argon2id
    const [{ password_hash }] = await api.dataSource.query(`SELECT password_hash FROM users WHERE id = $1`, [user.id]);
    expect(password_hash).toMatch(/^\$argon2id\$/);
  });

  it('signs out everywhere: every browser of the person, and on request every CLI token', async () => {
    const email = `everywhere${Date.now()}@example.com`;
    const laptop = await signedIn(email);
    const phone = webClient(api);
    const form = await phone.send('GET', '/login');
    expect((await phone.send('POST', '/login', { _csrf: phone.csrfFrom(form.text), email, password: 'correct horse' })).status).toBe(303);
    const user = await api.app.get(UsersService).findByEmail(email);
    const token = (await api.app.get(TokensService).issue({ userId: user!.id, origin: 'direct' })).accessToken;

    const page = await laptop.send('GET', '/settings/tokens');
    expect(page.text).toContain('Sign out everywhere');
    const out = await laptop.send('POST', '/logout/everywhere', { _csrf: laptop.csrfFrom(page.text), revoke_tokens: 'on' });
    expect(out.location).toBe('/login?signed_out=everywhere-and-tokens');
    expect((await laptop.send('GET', out.location!)).text).toContain('You are signed out on every device, and every CLI token of yours is revoked.');
    expect((await laptop.send('GET', '/settings/tokens')).status).toBe(303);
    expect((await phone.send('GET', '/settings/tokens')).status).toBe(303);
    expect(await countWebSessions(api, { userId: user!.id })).toBe(0);
    expect((await client(api).get(ROUTES.me).set('authorization', `Bearer ${token}`)).status).toBe(401);
  });

  it('creates a token with a chosen lifetime, redirects after it, and shows it once (a reload creates nothing)', async () => {
    const web = await signedIn();
    const page = await web.send('GET', '/settings/tokens');
    expect(page.text).toContain('<option value="90">90 days</option>');
    const created = await web.send('POST', '/settings/tokens', { _csrf: web.csrfFrom(page.text), label: 'ninety', expires_in_days: '90' });
    expect(created.status).toBe(303);
    expect(created.location).toBe('/settings/tokens');
    const shown = await web.send('GET', '/settings/tokens');
    const token = /id="new-token" class="token" type="text" readonly value="(prs_[^"]+)"/.exec(shown.text)?.[1];
    expect(token).toBeDefined();
    // sql-on-purpose: the new token is not readable in any stored session
    const stored = JSON.stringify(await api.dataSource.query(`SELECT sess FROM web_sessions`));
    expect(stored).not.toContain(token!.slice(4, 24)); // kept sealed under the session id until shown
    expect((await web.send('GET', '/settings/tokens')).text).not.toContain(token!);
    const me = await client(api).get(ROUTES.me).set('authorization', `Bearer ${token}`);
    expect(Date.parse(me.body.expiresAt) - Date.now()).toBeGreaterThan(89 * 24 * 3600_000);
    expect(await accessTokens(api, { label: 'ninety' })).toHaveLength(1);
    expect((await web.send('POST', '/settings/tokens', { _csrf: web.csrfFrom(page.text), expires_in_days: '7' })).status).toBe(400);
  });

  it('sends anonymous visitors of the verification URL to sign in, keeping the code and saying why', async () => {
    const start = await startDeviceLogin(api);
    const web = webClient(api);
    const res = await web.send('GET', `/device?user_code=${start.userCode}`);
    expect(res.status).toBe(303);
    expect(res.location).toBe(`/login?next=${encodeURIComponent(`/device?user_code=${start.userCode}`)}`);
    expect((await web.send('GET', res.location!)).text).toContain('Sign in to approve your terminal');
  });

  it('lets the web session issue a CLI token through the API, only with its CSRF token', async () => {
    const web = await signedIn();
    const page = await web.send('GET', '/settings/tokens');
    const csrf = web.csrfFrom(page.text);
    const without = await web.agent.post(ROUTES.issueToken).send({ label: 'no csrf' });
    expect(without.status).toBe(401);
    const ok = await web.agent.post(ROUTES.issueToken).set('x-csrf-token', csrf).send({ label: 'from the web' });
    expect(ok.status).toBe(201);
    expect((ok.body as { accessToken: string }).accessToken).toMatch(/^prs_/);
  });

  it('shows the program that asks (its User-Agent) on the approval page and, once approved, on the tokens page', async () => {
    const web = await signedIn();
    const started = await client(api).post(ROUTES.deviceStart).set('user-agent', 'prospect-cli/0.1.0 (linux; node 20.20.2)').send({ clientName: 'prospect CLI', hostname: 'ci-box' });
    const approval = await web.send('GET', `/device?user_code=${started.body.userCode}`);
    expect(approval.text).toContain('<dt>Program</dt><dd>prospect-cli/0.1.0 (linux; node 20.20.2)</dd>');
    await web.send('POST', '/device/approve', { _csrf: web.csrfFrom(approval.text), user_code: started.body.userCode });
    expect((await poll(api, started.body.deviceCode)).body.status).toBe('authorized');
    expect((await web.send('GET', '/settings/tokens')).text).toContain('prospect-cli/0.1.0 (linux; node 20.20.2)');
  });

  it('says so when the CLI cancelled the sign-in, naming it and its command, without raw Markdown', async () => {
    const web = await signedIn();
    const start = await startDeviceLogin(api);
    await client(api).post(ROUTES.deviceCancel).send({ deviceCode: start.deviceCode }).expect(204);
    const page = await web.send('GET', `/device?user_code=${start.userCode}`, undefined, { accept: 'text/html' });
    expect(page.status).toBe(410);
    expect(page.text).toContain('This sign-in was cancelled');
    expect(page.text).toContain('Prospect CLI stopped waiting for it');
    expect(page.text).toContain('In your terminal: <code>prospect auth:login</code>');
    expect(page.text).not.toContain('`');
  });

  it('approves over HTTP with the session and CSRF token', async () => {
    const user = await createUser(api);
    expect(user.role).toBeDefined();
    const web = await signedIn();
    const start = await startDeviceLogin(api);
    const approval = await web.send('GET', `/device?user_code=${start.userCode}`);
    expect(approval.status).toBe(200);
    const done = await web.send('POST', '/device/approve', { _csrf: web.csrfFrom(approval.text), user_code: start.userCode });
    expect(done.status).toBe(200);
    expect((await poll(api, start.deviceCode)).body.status).toBe('authorized');
  });

  // Last: the limit is also per IP, and every client here is 127.0.0.1.
  it('limits wrong codes to 5 a minute', async () => {
    const web = await signedIn();
    for (let i = 0; i < 5; i++) expect((await web.send('GET', '/device?user_code=BCDF-GHJK')).status).toBe(404);
    const limited = await web.send('GET', '/device?user_code=BCDF-GHJK');
    expect(limited.status).toBe(429);
    expect(limited.text).toContain('Too many wrong codes');
    // Even the right code waits: guessing must not be able to tell.
    const start = await startDeviceLogin(api);
    expect((await web.send('GET', `/device?user_code=${start.userCode}`)).status).toBe(429);
  });
});

describe('ALLOW_SIGNUP=false', () => {
  it('closes sign-up', async () => {
    const api = await startTestApp({ env: { ALLOW_SIGNUP: 'false' } });
    try {
      const res = await client(api).get('/signup').expect(403);
      expect(res.text).toContain('Sign-up is closed');
      await client(api).post('/signup').type('form').send('name=a&email=a%40b.co&password=correct+horse').expect(403);
      expect(await everyAccount(api)).toEqual([]);
    } finally {
      await api.close();
    }
  });
});

describe('web sessions', () => {
  const clock = new FakeClock(Date.now());
  const IDLE_SECONDS = 600;
  let api: TestApp;
  /** Someone with an authenticator app: their password alone leaves a browser half signed in. */
  let withSecondFactor: { email: string };
  beforeAll(async () => {
    api = await startTestApp({ clock, env: { WEB_SESSION_IDLE_SECONDS: String(IDLE_SECONDS), WEB_SESSION_MAX_SECONDS: '3600' } });
    withSecondFactor = await createUser(api);
    await enrolTotp(await signInAs(api, withSecondFactor.email, 'correct horse battery'), () => clock.now().getTime());
  });
  afterAll(() => api.close());

  const sessionCookie = (headers: Record<string, unknown>) => /prospect_session=([^;]+)/.exec(String(headers['set-cookie']))?.[1];

  async function signUp() {
    const web = webClient(api);
    const form = await web.send('GET', '/signup');
    expect(sessionCookie(form.headers)).toBeUndefined(); // showing a form stores no session
    // A session from before sign-in: a half-finished one (password right, second factor next), the
    // kind an attacker could plant; a passkey ceremony keeps none (issue #43).
    const login = await web.send('GET', '/login');
    const half = await web.send('POST', '/login', { _csrf: web.csrfFrom(login.text), email: withSecondFactor.email, password: 'correct horse battery' });
    expect(half).toMatchObject({ status: 303, location: '/login/code' });
    const anonymous = sessionCookie(half.headers);
    const signUpForm = await web.send('GET', '/signup');
    const res = await web.send('POST', '/signup', { _csrf: web.csrfFrom(signUpForm.text), name: 'S', email: `s${Date.now()}${Math.random()}@example.com`, password: 'correct horse' });
    expect(res.status).toBe(303);
    return { web, anonymous: anonymous!, signedIn: sessionCookie(res.headers)! };
  }

  it('gets a new session id at sign-in, and stores only the SHA-256 of ids', async () => {
    const { anonymous, signedIn } = await signUp();
    expect(anonymous).toBeDefined();
    expect(signedIn).not.toBe(anonymous);
    const ids = [anonymous, signedIn].map((cookie) => /^s%3A(prsw_[^.]+)\./.exec(cookie)![1]!);
    // sql-on-purpose: the session ids are stored only as their SHA-256
    const rows: Array<{ sid: string; user_id: string | null }> = await api.dataSource.query(`SELECT sid, user_id FROM web_sessions`);
    const stored = JSON.stringify(rows);
    for (const id of ids) expect(stored).not.toContain(id.slice(5, 25));
    expect(rows.map((r) => r.sid)).toContain(hashSessionId(ids[1]!));
    expect(rows.map((r) => r.sid)).not.toContain(hashSessionId(ids[0]!)); // the anonymous one was replaced
  });

  it('writes a sign-in\'s session once, so a late second write never undoes what the next page stores', async () => {
    // express-session saves a regenerated session again after the redirect's headers have gone;
    // the browser's next page (its CSRF token) raced that stale write under load.
    const counter = await countWebSessionWrites(api);
    try {
      const person = await createUser(api);
      const web = await signInAs(api, person.email, 'correct horse battery');
      expect(await counter.writesOf(person.id)).toBe(1);
      // The first page stores its CSRF token (one write); reading it again writes nothing.
      const page = await web.send('GET', '/settings/tokens');
      expect(await counter.writesOf(person.id)).toBe(2);
      expect((await web.send('GET', '/settings/tokens')).status).toBe(200);
      expect(await counter.writesOf(person.id)).toBe(2);
      expect((await web.send('POST', '/settings/tokens', { _csrf: web.csrfFrom(page.text), label: 'laptop' })).status).toBe(303);
    } finally {
      await counter.remove();
    }
  });

  it('never stores again a session that was ended while one of its requests was under way', async () => {
    // The request reads the session before the ending commits and writes it (its first page's CSRF
    // token) after: the library's upsert put the deleted row back, signed in as before.
    const person = await createUser(api);
    const web = await signInAs(api, person.email, 'correct horse battery');
    const ending = await sessionsEndingOf(api, person.id);
    const underWay = web.send('GET', '/settings/tokens');
    await rowLockWaitReached(api);
    await ending.commit();
    expect((await underWay).status).toBe(200);
    expect(await countWebSessions(api, { userId: person.id })).toBe(0);
    expect((await web.send('GET', '/settings/tokens')).location).toMatch(/^\/login/);
    // A sign-in afterwards stores its new session as before.
    await signInAs(api, person.email, 'correct horse battery');
    expect(await countWebSessions(api, { userId: person.id })).toBe(1);
  });

  it('approves nothing from a session ended while the approval was on its way: the page asks to sign in again, the code still pending', async () => {
    const person = await createUser(api);
    const web = await signInAs(api, person.email, 'correct horse battery');
    const start = await startDeviceLogin(api);
    const page = await web.send('GET', `/device?user_code=${start.userCode}`);
    const ending = await sessionsEndingOf(api, person.id);
    const approving = web.send('POST', '/device/approve', { _csrf: web.csrfFrom(page.text), user_code: start.userCode });
    await rowLockWaitReached(api);
    await ending.commit();
    const answer = await approving;
    expect(answer.status).toBe(303);
    expect(answer.location).toBe(`/device?user_code=${start.userCode}`);
    expect((await web.send('GET', answer.location!)).location).toBe(`/login?next=${encodeURIComponent(`/device?user_code=${start.userCode}`)}`);
    expect((await poll(api, start.deviceCode)).body).toEqual({ status: 'pending' });
  });

  it('ends a session after its absolute lifetime, however active', async () => {
    const { web } = await signUp();
    expect((await web.send('GET', '/settings/tokens')).status).toBe(200);
    clock.advanceSeconds(3601);
    const after = await web.send('GET', '/settings/tokens');
    expect(after.status).toBe(303);
    expect(after.location).toBe('/login?next=%2Fsettings%2Ftokens');
  });

  it('ends a session after its idle timeout, and each request keeps it alive', async () => {
    // The idle timeout is the store's expiry, kept in real time by express-session and
    // connect-pg-simple: the test moves the row's expiry instead of sleeping.
    const { web, signedIn } = await signUp();
    const sid = hashSessionId(/^s%3A(prsw_[^.]+)\./.exec(signedIn)![1]!);
    const secondsLeft = () => webSessionSecondsLeft(api, sid);

    await moveWebSessionExpiry(api, sid, 1);
    const kept = await web.send('GET', '/settings/tokens');
    expect(kept.status).toBe(200);
    expect(await secondsLeft()).toBeGreaterThan(IDLE_SECONDS - 60); // rolled forward by the request
    const cookieExpires = Date.parse(/Expires=([^;]+)/.exec(String(kept.headers['set-cookie']))![1]!);
    expect(cookieExpires - Date.now()).toBeGreaterThan((IDLE_SECONDS - 60) * 1000); // and so is the cookie

    await moveWebSessionExpiry(api, sid, -1);
    const ended = await web.send('GET', '/settings/tokens');
    expect(ended.status).toBe(303);
    expect(ended.location).toBe('/login?next=%2Fsettings%2Ftokens');
  });
});

describe('web sessions over https', () => {
  it('use __Host- cookies that are Secure, HttpOnly and SameSite=Lax', async () => {
    const api = await startTestApp({ env: { PUBLIC_URL: 'https://prospect.example.com' } });
    try {
      // Showing the form sets only the anonymous CSRF cookie, with the same attributes.
      const page = await client(api).get('/login').set('x-forwarded-proto', 'https').expect(200);
      const csrfCookie = String(page.headers['set-cookie']);
      expect(csrfCookie).toMatch(/^__Host-prospect_csrf=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; Secure; SameSite=Lax$/);
      const csrfToken = csrfFrom(page.text);
      // A passkey ceremony keeps its challenge in a cookie of its own (issue #43), sent only to its routes.
      const ceremony = await client(api)
        .post('/login/passkey/options')
        .set('x-forwarded-proto', 'https')
        .set('cookie', csrfCookie.split(';')[0]!)
        .set('x-csrf-token', csrfToken)
        .send({})
        .expect(200);
      expect(String(ceremony.headers['set-cookie'])).toMatch(/^__Secure-prospect_passkey=[A-Za-z0-9_-]+; Max-Age=300; Path=\/login\/passkey; Expires=[^;]+; HttpOnly; Secure; SameSite=Strict$/);
      // The session's cookie, from a sign-in.
      const person = await createUser(api);
      const res = await client(api)
        .post('/login')
        .set('x-forwarded-proto', 'https')
        .set('cookie', csrfCookie.split(';')[0]!)
        .type('form')
        .send({ _csrf: csrfToken, email: person.email, password: 'correct horse battery' })
        .expect(303);
      const cookie = ((res.headers['set-cookie'] as unknown as string[]) ?? []).find((c) => c.startsWith('__Host-prospect_session='));
      expect(cookie).toMatch(/^__Host-prospect_session=s%3Aprsw_[^;]+; Path=\/; Expires=[^;]+; HttpOnly; Secure; SameSite=Lax$/);
    } finally {
      await api.close();
    }
  });
});
