import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';
import { PasskeysRepository } from '../../src/accounts/passkeys.repository.js';
import { FakeClock } from '../support/fake-clock.js';
import { countAuthEvents, createUser, forgetRateLimits } from '../support/fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { countWebSessions } from '../support/web-session-fixtures.js';
import { webClient, type WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const JSON_ANSWER = { accept: 'application/json' };
const b64url = (bytes: Buffer | Uint8Array) => Buffer.from(bytes).toString('base64url');

/**
 * A passkey held in the test: an ES256 key pair whose public half is registered for a person, and
 * which answers a challenge as an authenticator would (user present and verified, counter growing;
 * or, `synced`, always zero, as synced passkeys send).
 */
class SoftwarePasskey {
  readonly credentialId = b64url(randomBytes(32));
  private readonly privateKey: KeyObject;
  private readonly coseKey: Uint8Array;
  private counter = 0;

  constructor(private readonly synced = false) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const { x, y } = publicKey.export({ format: 'jwk' });
    this.privateKey = privateKey;
    // COSE_Key: kty EC2, alg ES256, crv P-256, x, y.
    this.coseKey = isoCBOR.encode(new Map<number, number | Uint8Array>([[1, 2], [3, -7], [-1, 1], [-2, Buffer.from(x!, 'base64url')], [-3, Buffer.from(y!, 'base64url')]]));
  }

  async register(api: TestApp, userId: string): Promise<void> {
    const added = await api.app.get(PasskeysRepository).insert(
      { userId, credentialId: this.credentialId, publicKey: Buffer.from(this.coseKey), counter: 0, transports: ['internal'], name: 'Laptop', createdAt: new Date() },
      null,
    );
    expect(added).toBe(true);
  }

  /** The browser's answer to `challenge` at `origin` (the JSON the page's script posts). */
  answer(challenge: string, origin: string): string {
    if (!this.synced) this.counter += 1;
    const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin, crossOrigin: false }));
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.counter);
    const authenticatorData = Buffer.concat([createHash('sha256').update(new URL(origin).hostname).digest(), Buffer.from([0x05]), counter]);
    const signature = sign('sha256', Buffer.concat([authenticatorData, createHash('sha256').update(clientDataJSON).digest()]), this.privateKey);
    return JSON.stringify({
      id: this.credentialId,
      rawId: this.credentialId,
      type: 'public-key',
      response: { clientDataJSON: b64url(clientDataJSON), authenticatorData: b64url(authenticatorData), signature: b64url(signature) },
      clientExtensionResults: {},
    });
  }
}

/** An assertion that names `credentialId` and proves nothing. */
const fakeAnswer = (credentialId: string) =>
  JSON.stringify({ id: credentialId, rawId: credentialId, type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: 'AAAA', signature: 'AAAA' }, clientExtensionResults: {} });

/** Issue #31 item 6: passkey sign-in is limited like password sign-in, counted before the assertion is verified. */
describe('passkey sign-in limits', () => {
  /** The sign-in page's passkey ceremony in `web`: its CSRF token and a challenge kept in its session. */
  async function begin(web: WebClient, route = '/login/passkey', page = '/login') {
    const csrf = web.csrfFrom((await web.send('GET', page)).text);
    const options = await web.send('POST', `${route}/options`, { _csrf: csrf }, JSON_ANSWER);
    expect(options.status).toBe(200);
    return { csrf, challenge: JSON.parse(options.text).challenge as string };
  }
  /** One try from a new browser without cookies: options, then `answer`. */
  async function tryFromNewBrowser(api: TestApp, answer: string) {
    const web = webClient(api);
    const { csrf } = await begin(web);
    return web.send('POST', '/login/passkey', { _csrf: csrf, response: answer, next: '/settings/tokens' }, JSON_ANSWER);
  }
  const refusedPasskeys = (api: TestApp, userId?: string) => countAuthEvents(api, { type: 'web.login_failed', userId, detail: { reason: 'passkey refused' } });

  describe('per credential id, and the owner’s recognised browser apart', () => {
    let api: TestApp;
    beforeAll(async () => {
      api = await startTestApp();
    });
    afterAll(() => api?.close());
    beforeEach(() => forgetRateLimits(api));

    it('300 fake assertions for bob’s passkey at once: 5 verified, the rest 429 with Retry-After, neither verified nor audited', async () => {
      const bob = await createUser(api);
      const passkey = new SoftwarePasskey();
      await passkey.register(api, bob.id);
      const before = await refusedPasskeys(api);

      const answers = await Promise.all(Array.from({ length: 300 }, () => tryFromNewBrowser(api, fakeAnswer(passkey.credentialId))));
      expect(answers.filter((r) => r.status === 401)).toHaveLength(5);
      const limited = answers.filter((r) => r.status === 429);
      expect(limited).toHaveLength(295);
      expect(JSON.parse(limited[0]!.text)).toMatchObject({ statusCode: 429, error: 'too_many_requests' });
      expect(Number(limited[0]!.headers['retry-after'])).toBeGreaterThan(14 * 60);
      expect(Number(limited[0]!.headers['retry-after'])).toBeLessThanOrEqual(15 * 60);
      // Only the verified ones were audited: one row each, not one per try.
      expect((await refusedPasskeys(api)) - before).toBe(5);
      // The counter keeps the credential id's hash, not the id.
      // sql-on-purpose: the counter's key at rest holds the credential id's hash
      const keys = (await api.dataSource.query(`SELECT key FROM rate_limits WHERE key LIKE 'passkey:%'`)).map((row: { key: string }) => row.key);
      expect(keys).toEqual([`passkey:credential:${createHash('sha256').update(passkey.credentialId).digest('base64url')}`]);
      // Another person's passkey is not limited by it.
      const carol = await createUser(api);
      const carols = new SoftwarePasskey();
      await carols.register(api, carol.id);
      expect((await tryFromNewBrowser(api, fakeAnswer(carols.credentialId))).status).toBe(401);
    });

    it('bob’s browser that signed in before still signs in with his passkey; a new browser waits, even with the real one', async () => {
      const bob = await createUser(api);
      const passkey = new SoftwarePasskey();
      await passkey.register(api, bob.id);
      // Bob signs in with his passkey once (his browser gets a device cookie), then signs out.
      const browser = webClient(api);
      const first = await begin(browser);
      const signedIn = await browser.send('POST', '/login/passkey', { _csrf: first.csrf, response: passkey.answer(first.challenge, api.baseUrl), next: '/settings/tokens' }, JSON_ANSWER);
      expect(signedIn.status).toBe(200);
      expect(JSON.parse(signedIn.text)).toEqual({ next: '/settings/tokens' });
      const tokensPage = await browser.send('GET', '/settings/tokens');
      expect((await browser.send('POST', '/logout', { _csrf: browser.csrfFrom(tokensPage.text) })).status).toBe(303);

      const answers = await Promise.all(Array.from({ length: 50 }, () => tryFromNewBrowser(api, fakeAnswer(passkey.credentialId))));
      expect(answers.filter((r) => r.status === 401)).toHaveLength(5);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(45);

      const stranger = webClient(api);
      const strangers = await begin(stranger);
      expect((await stranger.send('POST', '/login/passkey', { _csrf: strangers.csrf, response: passkey.answer(strangers.challenge, api.baseUrl) }, JSON_ANSWER)).status).toBe(429);

      const again = await begin(browser);
      const owner = await browser.send('POST', '/login/passkey', { _csrf: again.csrf, response: passkey.answer(again.challenge, api.baseUrl), next: '/settings/tokens' }, JSON_ANSWER);
      expect(owner.status).toBe(200);
      expect((await browser.send('GET', '/settings/tokens')).status).toBe(200);
      expect(await countAuthEvents(api, { type: 'web.login', userId: bob.id, detail: { secondFactor: 'passkey' } })).toBe(2);
    });

    it('the passkey of the second step is counted the same way, and bob’s recognised browser still completes it', async () => {
      const bob = await createUser(api);
      const passkey = new SoftwarePasskey();
      await passkey.register(api, bob.id);
      const passwordStep = async (web: WebClient) => {
        const form = await web.send('GET', '/login');
        expect(await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email: bob.email, password: PASSWORD, next: '/settings/tokens' })).toMatchObject({ status: 303, location: '/login/code' });
      };
      const secondStep = async (web: WebClient, answer: (challenge: string) => string) => {
        const { csrf, challenge } = await begin(web, '/login/code/passkey', '/login/code');
        return web.send('POST', '/login/code/passkey', { _csrf: csrf, response: answer(challenge) }, JSON_ANSWER);
      };
      // Bob's browser completes a sign-in with his password and passkey once: it holds a device cookie now.
      const browser = webClient(api);
      await passwordStep(browser);
      expect((await secondStep(browser, (challenge) => passkey.answer(challenge, api.baseUrl))).status).toBe(200);
      const tokensPage = await browser.send('GET', '/settings/tokens');
      expect((await browser.send('POST', '/logout', { _csrf: browser.csrfFrom(tokensPage.text) })).status).toBe(303);

      // Someone who knows the password sends fake assertions at the second step.
      const attacker = webClient(api);
      await passwordStep(attacker);
      const before = await refusedPasskeys(api, bob.id);
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await secondStep(attacker, () => fakeAnswer(passkey.credentialId))).status);
      expect(statuses.filter((s) => s === 401)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(15);
      expect((await refusedPasskeys(api, bob.id)) - before).toBe(5);

      await passwordStep(browser);
      const answer = await secondStep(browser, (challenge) => passkey.answer(challenge, api.baseUrl));
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text)).toEqual({ next: '/settings/tokens' });
    });
  });

  describe('per address', () => {
    let api: TestApp;
    beforeAll(async () => {
      api = await startTestApp({ env: { SIGNIN_PER_IP_PER_HOUR: '20' } });
    });
    afterAll(() => api?.close());

    it('300 fake assertions naming unknown credentials from one address: the address’s limit of failed sign-ins are checked, the rest 429', async () => {
      const ids = Array.from({ length: 300 }, () => b64url(randomBytes(32)));
      const answers = await Promise.all(ids.map((id) => tryFromNewBrowser(api, fakeAnswer(id))));
      expect(answers.filter((r) => r.status === 401)).toHaveLength(20);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(280);
      expect(await refusedPasskeys(api)).toBe(20);
      // A made-up credential id is counted against the address alone: no row for each.
      // sql-on-purpose: nothing is stored per made-up credential id
      expect(await api.dataSource.query(`SELECT key FROM rate_limits WHERE key LIKE 'passkey:%'`)).toEqual([]);
    });
  });
});

/** Issue #43, finding 6: the sign-in page's passkey ceremony stores nothing, and its challenge still signs in once. */
describe('an anonymous passkey ceremony', () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp({ clock });
  });
  afterAll(() => api?.close());

  /** `name=value` of the cookie `name` a response set. */
  const cookieSet = (headers: Record<string, unknown>, name: string) => ((headers['set-cookie'] as string[] | undefined) ?? []).find((c) => c.startsWith(`${name}=`))?.split(';')[0];

  it('many options requests with one anonymous CSRF token store no session; the last one signs in, once', async () => {
    const bob = await createUser(api);
    const passkey = new SoftwarePasskey(true);
    await passkey.register(api, bob.id);
    const web = webClient(api);
    const form = await web.send('GET', '/login');
    const csrf = web.csrfFrom(form.text);
    const csrfCookie = cookieSet(form.headers, 'prospect_csrf')!;
    const before = await countWebSessions(api);

    const asked = await Promise.all(Array.from({ length: 50 }, () => web.send('POST', '/login/passkey/options', { _csrf: csrf }, JSON_ANSWER)));
    expect(asked.map((r) => r.status)).toEqual(asked.map(() => 200));
    expect(await countWebSessions(api)).toBe(before);

    // The last ceremony this browser started is the one it answers.
    const last = await web.send('POST', '/login/passkey/options', { _csrf: csrf }, JSON_ANSWER);
    const ceremony = cookieSet(last.headers, 'prospect_passkey');
    expect(ceremony).toBeDefined();
    expect(String(last.headers['set-cookie'])).toMatch(/prospect_passkey=[^;]+; Max-Age=300; Path=\/login\/passkey; Expires=[^;]+; HttpOnly; SameSite=Strict/);
    expect(await countWebSessions(api)).toBe(before);
    const answer = { _csrf: csrf, response: passkey.answer(JSON.parse(last.text).challenge, api.baseUrl), next: '/settings/tokens' };
    const signedIn = await web.send('POST', '/login/passkey', answer, JSON_ANSWER);
    expect(signedIn.status).toBe(200);
    expect((await web.send('GET', '/settings/tokens')).status).toBe(200);
    expect(await countWebSessions(api)).toBe(before + 1);

    // The same cookie and assertion presented again (a copy of both): refused, though this passkey keeps no counter.
    const replay = webClient(api);
    const again = await replay.agent.post('/login/passkey').set({ ...JSON_ANSWER, cookie: `${csrfCookie}; ${ceremony}` }).type('form').send(new URLSearchParams(answer).toString());
    expect(again.status).toBe(401);
    expect(again.body.message).toMatch(/already used/);
    expect(await countWebSessions(api)).toBe(before + 1);
  });

  it('a ceremony answered after five minutes, or without its cookie, signs no one in', async () => {
    const bob = await createUser(api);
    const passkey = new SoftwarePasskey();
    await passkey.register(api, bob.id);
    const web = webClient(api);
    const csrf = web.csrfFrom((await web.send('GET', '/login')).text);
    const late = JSON.parse((await web.send('POST', '/login/passkey/options', { _csrf: csrf }, JSON_ANSWER)).text).challenge as string;
    clock.advanceSeconds(301);
    expect((await web.send('POST', '/login/passkey', { _csrf: csrf, response: passkey.answer(late, api.baseUrl) }, JSON_ANSWER)).status).toBe(401);
    const stranger = webClient(api);
    const strangersCsrf = stranger.csrfFrom((await stranger.send('GET', '/login')).text);
    expect((await stranger.send('POST', '/login/passkey', { _csrf: strangersCsrf, response: passkey.answer(late, api.baseUrl) }, JSON_ANSWER)).status).toBe(401);
    // A fresh one still works.
    const fresh = JSON.parse((await web.send('POST', '/login/passkey/options', { _csrf: csrf }, JSON_ANSWER)).text).challenge as string;
    expect((await web.send('POST', '/login/passkey', { _csrf: csrf, response: passkey.answer(fresh, api.baseUrl) }, JSON_ANSWER)).status).toBe(200);
  });
});
