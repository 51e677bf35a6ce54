import { OrganizationsService } from '../../src/organizations/organizations.service.js';
import { federatedLinksOf } from '../support/federation-fixtures.js';
import { authEvents, createUser, userByEmail } from '../support/fixtures.js';
import type { TestApp } from '../support/test-app.js';
import { enrolTotp } from '../support/account-flows.js';
import { csrfFrom, signInAs, webClient } from '../support/web-client.js';
import { answerFor, orgLog, postToAcs, refusalsOf, SamlSpec, signedInAs, startSignIn } from './support/saml-fixtures.js';
import { newSigningKey, SamlIdp } from './support/saml-idp.js';

/**
 * SAML 2.0 sign-in per organization (issue #47, item 1) against a real IdP of the test's own
 * (node:http, signing with xml-crypto), the browser played by an HTTP client that keeps its
 * cookies: SP-initiated sign-in ends signed in; each forged, replayed, misdirected, expired or
 * foreign answer is refused with one generic page, its reason in the organization's log; an
 * existing account of the address is not taken over.
 */
describe('SAML sign-in', () => {
  const saml = new SamlSpec();
  let api: TestApp;
  beforeAll(async () => (api = await saml.start()));
  afterAll(() => saml.close());
  const { team, answerWith, expectRefused } = saml;

  it('starts at /saml/{slug}/login with an AuthnRequest for the ACS, and serves the SP metadata', async () => {
    const { t, idp } = await team();
    const web = webClient(api);
    const { location, request } = await startSignIn(web, t.slug);
    expect(location.startsWith(`${idp.url}/sso?SAMLRequest=`)).toBe(true);
    expect(request).toMatchObject({ acsUrl: `${api.baseUrl}/saml/${t.slug}/acs`, issuer: t.sp.spEntityId, destination: `${idp.url}/sso` });
    const metadata = await web.send('GET', `/saml/${t.slug}/metadata`);
    expect(metadata.status).toBe(200);
    expect(metadata.headers['content-type']).toContain('application/samlmetadata+xml');
    expect(metadata.text).toContain(`entityID="${t.sp.spEntityId}"`);
    expect(metadata.text).toContain(`Location="${t.sp.acsUrl}"`);
    expect(metadata.text).toContain('urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST');
    expect((await web.send('GET', '/saml/no-such-org/metadata')).status).toBe(404);
    expect((await web.send('GET', '/saml/no-such-org/login')).status).toBe(404);
  });

  it('a signed assertion in answer to this browser’s request signs in, making the account and the membership', async () => {
    const { t, idp } = await team();
    const email = t.address('ada');
    const { res, web } = await answerWith(t, (id) => idp.response(answerFor(t, email, id, { attributes: { displayName: 'Ada L' } })));
    expect(res.status).toBe(303);
    expect(res.location).toBe('/settings/account');
    expect(await signedInAs(web)).toBe(email);
    const user = (await userByEmail(api, email))!;
    expect(user).toMatchObject({ name: 'Ada L', emailVerifiedAt: expect.any(Date) });
    expect(await api.app.get(OrganizationsService).membership(t.slug, user.id, null)).toMatchObject({ role: 'member' });
    expect(await federatedLinksOf(api, { subject: email })).toEqual([expect.objectContaining({ userId: user.id })]);
    // In the organization's log: the sign-in through its connection.
    const log = (await orgLog(api, t.orgId)).filter((e) => e.actorEmail === email);
    expect(log.map((e) => e.type)).toEqual(expect.arrayContaining(['org.member_add', 'federation.login']));
  });

  it('a signed response (assertion unsigned inside it) is accepted too', async () => {
    const { t, idp } = await team();
    const { res, web } = await answerWith(t, (id) => idp.response(answerFor(t, t.address('bo'), id, { sign: 'response' })));
    expect(res.status).toBe(303);
    expect(await signedInAs(web)).toBe(t.address('bo'));
  });

  it('refuses an unsigned assertion', async () => {
    const { t, idp } = await team();
    await expectRefused(t, await answerWith(t, (id) => idp.response(answerFor(t, t.address('cy'), id, { sign: 'none' }))), /signature/i);
    expect(await userByEmail(api, t.address('cy'))).toBeNull();
  });

  it('refuses an assertion signed by another key', async () => {
    const { t, idp } = await team();
    const other = newSigningKey('someone-else');
    await expectRefused(t, await answerWith(t, (id) => idp.response(answerFor(t, t.address('di'), id, { key: other }))), /signature/i);
    await expectRefused(t, await answerWith(t, (id) => idp.response(answerFor(t, t.address('di'), id, { key: other, sign: 'response' }))), /signature/i);
    expect(await userByEmail(api, t.address('di'))).toBeNull();
  });

  it('refuses a wrapped assertion: the signed one moved aside, an unsigned evil one where the SP reads', async () => {
    const { t, idp } = await team();
    const victim = t.address('eve-victim');
    const evil = t.address('mallory');
    await expectRefused(t, await answerWith(t, (id) => idp.wrappedResponse(answerFor(t, victim, id), { nameId: evil })), /signature/i);
    expect(await userByEmail(api, evil)).toBeNull();
    expect(await userByEmail(api, victim)).toBeNull();
  });

  it('refuses a replayed assertion: an assertion ID is accepted once', async () => {
    const { t, idp } = await team({ allowSignUp: true, allowIdpInitiated: true });
    // Unsolicited (IdP-initiated, allowed here): the same response posted twice.
    const unsolicited = idp.response(answerFor(t, t.address('fay')));
    const first = webClient(api);
    expect((await postToAcs(first, t.slug, unsolicited)).status).toBe(303);
    const replay = webClient(api);
    await expectRefused(t, { res: await postToAcs(replay, t.slug, unsolicited), web: replay }, /used already/);
    // SP-initiated: the IdP (or someone who kept it) reissues the same assertion ID to a new request.
    const assertionId = `_replayed${Date.now()}`;
    expect((await answerWith(t, (id) => idp.response(answerFor(t, t.address('gus'), id, { assertionId })))).res.status).toBe(303);
    await expectRefused(t, await answerWith(t, (id) => idp.response(answerFor(t, t.address('gus'), id, { assertionId }))), /used already/);
  });

  it('replicas share the replay cache: the same assertion at two at once is accepted once', async () => {
    const { t, idp } = await team({ allowSignUp: true, allowIdpInitiated: true });
    const unsolicited = idp.response(answerFor(t, t.address('hal')));
    const answers = await Promise.all(Array.from({ length: 6 }, () => postToAcs(webClient(api), t.slug, unsolicited)));
    expect(answers.map((a) => a.status).sort()).toEqual([303, 401, 401, 401, 401, 401]);
  });

  it('refuses a wrong audience', async () => {
    const { t, idp } = await team();
    await expectRefused(t, await answerWith(t, (id) => idp.response(answerFor(t, t.address('ian'), id, { audience: 'https://another-sp.example/metadata' }))), /audience/i);
  });

  it('refuses a Recipient or Destination that is not this ACS, and another Issuer', async () => {
    const { t, idp } = await team();
    const other = `${api.baseUrl}/saml/another-org/acs`;
    await expectRefused(t, await answerWith(t, (id) => idp.response(answerFor(t, t.address('jo'), id, { recipient: other }))), /Recipient/);
    await expectRefused(t, await answerWith(t, (id) => idp.response(answerFor(t, t.address('jo'), id, { destination: other }))), /Destination/);
    await expectRefused(t, await answerWith(t, (id) => idp.response(answerFor(t, t.address('jo'), id, { issuer: 'https://evil.example/idp' }))), /Issuer/);
  });

  it('refuses an expired assertion, and one not valid yet (beyond the skew)', async () => {
    const { t, idp } = await team();
    await expectRefused(t, await answerWith(t, (id) => idp.response(answerFor(t, t.address('kim'), id, { notBefore: -20 * 60_000, notOnOrAfter: -5 * 60_000 }))), /expired|no valid subject confirmation/i);
    await expectRefused(t, await answerWith(t, (id) => idp.response(answerFor(t, t.address('kim'), id, { notBefore: 10 * 60_000, notOnOrAfter: 15 * 60_000 }))), /not yet valid/i);
    expect(await userByEmail(api, t.address('kim'))).toBeNull();
  });

  it('refuses an address outside the organization’s verified domains', async () => {
    const { t, idp } = await team();
    const web = webClient(api);
    const { request } = await startSignIn(web, t.slug);
    const res = await postToAcs(web, t.slug, idp.response(answerFor(t, 'lee@not-verified.test', request.id)));
    expect(res.status).toBe(403);
    expect(await signedInAs(web)).toBeNull();
    expect(await userByEmail(api, 'lee@not-verified.test')).toBeNull();
    expect((await refusalsOf(api, t.orgId)).at(-1)).toMatch(/outside/);
  });

  it('refuses an unsolicited response while IdP-initiated sign-in is off', async () => {
    const { t, idp } = await team();
    const web = webClient(api);
    await expectRefused(t, { res: await postToAcs(web, t.slug, idp.response(answerFor(t, t.address('max')))), web }, /InResponseTo is missing/);
    // Nor does a flight of this browser make it one it asked for.
    await expectRefused(t, await answerWith(t, () => idp.response(answerFor(t, t.address('max')))), /InResponseTo is missing/);
  });

  it('refuses an answer to another browser’s request (login CSRF)', async () => {
    const { t, idp } = await team();
    const attacker = webClient(api);
    const { request: attackers } = await startSignIn(attacker, t.slug);
    const victim = webClient(api);
    await startSignIn(victim, t.slug);
    // The attacker's own signed-in answer, delivered to the victim's browser.
    const forced = idp.response(answerFor(t, t.address('attacker'), attackers.id));
    await expectRefused(t, { res: await postToAcs(victim, t.slug, forced), web: victim }, /InResponseTo/);
    // Even with IdP-initiated sign-in on, an InResponseTo must be this browser's.
    await t.call('PATCH', { allowIdpInitiated: true });
    const again = webClient(api);
    await startSignIn(again, t.slug);
    await expectRefused(t, { res: await postToAcs(again, t.slug, idp.response(answerFor(t, t.address('attacker'), attackers.id))), web: again }, /InResponseTo/);
  });

  it('does not take over an existing local account of the address: it proves the account first', async () => {
    const { t, idp } = await team({ allowSignUp: true, enforce: true });
    const local = await createUser(api, { email: t.address('nia') });
    const web = webClient(api);
    const { request } = await startSignIn(web, t.slug);
    const res = await postToAcs(web, t.slug, idp.response(answerFor(t, local.email, request.id)));
    // Even with the domain enforced: to /login/link, not signed in, not linked.
    expect(res.status).toBe(303);
    expect(res.location).toBe('/login/link');
    expect(await signedInAs(web)).toBeNull();
    expect(await federatedLinksOf(api, { subject: local.email })).toEqual([]);
    const page = await web.send('GET', '/login/link');
    expect(page.text).toContain('already has a Prospect account');
    const wrong = await web.send('POST', '/login/link/password', { _csrf: csrfFrom(page.text), password: 'a guess' });
    expect(wrong.status).toBe(401);
    expect(await federatedLinksOf(api, { subject: local.email })).toEqual([]);
    // Its own password proves it: linked, signed in, what it had kept.
    const proven = await web.send('POST', '/login/link/password', { _csrf: csrfFrom(page.text), password: 'correct horse battery' });
    expect(proven.status).toBe(303);
    expect(await federatedLinksOf(api, { subject: local.email })).toEqual([expect.objectContaining({ userId: local.id })]);
    const next = await web.send('GET', proven.location!);
    expect([200, 303]).toContain(next.status);
    expect(await signedInAs(web)).toBe(local.email);
  });

  it('a second factor counts only from an AuthnContextClassRef the admin named', async () => {
    const { t, idp } = await team({ allowSignUp: true, secondFactorContexts: ['urn:test:mfa'] });
    const user = await createUser(api, { email: t.address('oz') });
    // Linked first through the proof by password.
    const web = webClient(api);
    const first = await answerWith(t, (id) => idp.response(answerFor(t, user.email, id)), web);
    expect(first.res.location).toBe('/login/link');
    const page = await web.send('GET', '/login/link');
    await web.send('POST', '/login/link/password', { _csrf: csrfFrom(page.text), password: 'correct horse battery' });
    expect(await federatedLinksOf(api, { subject: user.email })).toHaveLength(1);
    // The account's owner sets up an authenticator app.
    await enrolTotp(await signInAs(api, user.email, 'correct horse battery'));
    // An answer with an unnamed context: Prospect asks for its own code.
    const plain = await answerWith(t, (id) => idp.response(answerFor(t, user.email, id, { authnContextClassRef: 'urn:test:mfa-not-really' })));
    expect(plain.res.location).toBe('/login/code');
    // The named one stands for it.
    const mfa = await answerWith(t, (id) => idp.response(answerFor(t, user.email, id, { authnContextClassRef: 'urn:test:mfa' })));
    expect(mfa.res.location).toBe('/settings/account');
    expect(await signedInAs(mfa.web)).toBe(user.email);
  });

  it('a typed address of a domain the connection enforces goes from /login to /saml/{slug}/login', async () => {
    const { t } = await team({ allowSignUp: true, enforce: true });
    const web = webClient(api);
    const login = await web.send('GET', '/login');
    const res = await web.send('POST', '/login', { _csrf: csrfFrom(login.text), email: t.address('pat'), password: '' });
    expect(res.status).toBe(200);
    expect(res.text).toContain(`/saml/${t.slug}/login?`);
  });

  it('sudo mode through the connection: a fresh sign-in at the IdP, of the identity linked to this person, in this session', async () => {
    const { t, idp } = await team();
    const email = t.address('sue');
    const { web } = await answerWith(t, (id) => idp.response(answerFor(t, email, id)));
    const user = (await userByEmail(api, email))!;
    const providerId = `saml-${t.orgId}`;
    expect((await web.send('GET', '/sudo?next=%2Fsettings%2Fsecurity')).text).toContain(`/sudo/sso/${providerId}?next`);
    const confirm = async (answer: (requestId: string) => string, browser = web) => {
      const started = await browser.send('GET', `/sudo/sso/${providerId}?next=%2Fsettings%2Fsecurity`);
      expect(started.status).toBe(303);
      const request = SamlIdp.authnRequestOf(started.location!);
      expect(request.forceAuthn).toBe(true);
      const acs = await postToAcs(browser, t.slug, answer(request.id));
      if (acs.status !== 303) return acs;
      expect(acs.location).toBe(`/saml/${t.slug}/sudo-done`);
      return browser.send('GET', acs.location!);
    };
    const sudoEvents = () => authEvents(api, { type: 'web.sudo', userId: user.id });
    // Someone else's identity at the IdP does not confirm this person.
    expect((await confirm((id) => idp.response(answerFor(t, t.address('someone-else'), id)))).status).toBe(403);
    // A sign-in the IdP remembered from before the request is not a fresh one.
    expect((await confirm((id) => idp.response(answerFor(t, email, id, { authnInstant: -10 * 60_000 })))).status).toBe(401);
    expect(await sudoEvents()).toEqual([]);
    // The answer counts only in the session that asked: another browser of the same person cannot carry it.
    const other = (await answerWith(t, (id) => idp.response(answerFor(t, email, id)))).web;
    const started = SamlIdp.authnRequestOf((await web.send('GET', `/sudo/sso/${providerId}?next=%2Fsettings%2Fsecurity`)).location!);
    const carried = await postToAcs(web, t.slug, idp.response(answerFor(t, email, started.id)));
    // The ACS clears the sudo flight, then sets its answer: the last, non-empty prospect_saml (not the clearing one).
    const flightCookie = (carried.headers['set-cookie'] as unknown as string[]).filter((c) => /^prospect_saml=[^;]/.test(c)).at(-1)!.split(';')[0]!;
    const carriedElsewhere = await other.agent.get(`/saml/${t.slug}/sudo-done`).set('Cookie', flightCookie).redirects(0);
    expect(carriedElsewhere.status).toBe(400);
    expect(carriedElsewhere.text).toContain('started in another session');
    expect(await sudoEvents()).toEqual([]);
    // The person's own fresh sign-in does.
    const done = await confirm((id) => idp.response(answerFor(t, email, id)));
    expect(done.status).toBe(303);
    expect(done.location).toBe('/settings/security');
    expect(await sudoEvents()).toEqual([expect.objectContaining({ detail: expect.objectContaining({ with: 'provider', providerId }) })]);
  });
});
