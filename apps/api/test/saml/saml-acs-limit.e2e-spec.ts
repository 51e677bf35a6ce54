import { forgetRateLimits } from '../support/fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { webClient } from '../support/web-client.js';
import { answerFor, orgLog, postToAcs, samlTeam, type SamlTeam, startSignIn } from './support/saml-fixtures.js';
import { SamlIdp } from './support/saml-idp.js';

const LIMIT = 10;

/**
 * The ACS (`POST /saml/{slug}/acs`) is an anonymous sign-in door like /login and passkey sign-in:
 * each post is counted against its address (SIGNIN_PER_IP_PER_HOUR, shared with them) before its
 * XML is read, in Postgres, so parallel posts get exactly the limit; past it, a 429 page with
 * Retry-After, and nothing parsed or verified. A verified answer gives its point back.
 */
describe('the SAML ACS’s limit per address', () => {
  let api: TestApp;
  let idp: SamlIdp;
  let t: SamlTeam;
  beforeAll(async () => {
    api = await startTestApp({ env: { SIGNIN_PER_IP_PER_HOUR: String(LIMIT) } });
    idp = await SamlIdp.start();
    t = await samlTeam(api, idp);
  });
  beforeEach(() => forgetRateLimits(api));
  afterAll(async () => {
    await idp?.close();
    await api?.close();
  });

  /** The forged answers the organization's log counted (the ones whose XML was read), all reasons together. */
  const refusedAnswers = async () =>
    (await orgLog(api, t.orgId)).filter((e) => e.type === 'federation.login_refused').reduce((sum, e) => sum + Number(e.detail.count ?? 1), 0);

  it(`${LIMIT * 4} forged answers at once from one address: exactly ${LIMIT} are read (and refused), the rest are 429 with Retry-After and a page, unread`, async () => {
    const before = await refusedAnswers();
    // Each in a browser of its own, with a sign-in of its own started: as many browsers behind one address.
    const browsers = await Promise.all(
      Array.from({ length: LIMIT * 4 }, async (_, i) => {
        const web = webClient(api);
        const { request } = await startSignIn(web, t.slug);
        return { web, forged: idp.response(answerFor(t, t.address(`forged${i}`), request.id, { sign: 'none' })) };
      }),
    );
    const answers = await Promise.all(browsers.map(({ web, forged }) => postToAcs(web, t.slug, forged)));

    expect(answers.filter((r) => r.status === 401)).toHaveLength(LIMIT);
    const limited = answers.filter((r) => r.status === 429);
    expect(limited).toHaveLength(LIMIT * 3);
    for (const res of limited) {
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.text).toMatch(/Too many failed sign-ins from your address\. Please wait \d+ (minutes|seconds) before trying again\./);
    }
    // Only the admitted ones were read: their refusals are in the organization's log, no more.
    expect((await refusedAnswers()) - before).toBe(LIMIT);

    // The address's budget is the one /login uses too: a password sign-in from it waits as well.
    const login = webClient(api);
    const form = await login.send('GET', '/login');
    expect((await login.send('POST', '/login', { _csrf: login.csrfFrom(form.text), email: 'anyone@example.com', password: 'wrong password' })).status).toBe(429);
  });

  it('a verified answer gives its point back: more sign-ins than the limit, one after another, all go through', async () => {
    for (let i = 0; i < LIMIT + 3; i++) {
      const web = webClient(api);
      const { request } = await startSignIn(web, t.slug);
      const res = await postToAcs(web, t.slug, idp.response(answerFor(t, t.address(`member${i}`), request.id)));
      expect(res.status).toBe(303);
    }
    // And failures still count after them: the limit's worth are read, then 429.
    const statuses: number[] = [];
    for (let i = 0; i <= LIMIT; i++) statuses.push((await postToAcs(webClient(api), t.slug, Buffer.from('<not-saml/>').toString('base64'))).status);
    expect(statuses.slice(0, LIMIT).every((s) => s >= 400 && s < 429)).toBe(true);
    expect(statuses[LIMIT]).toBe(429);
  });
});
