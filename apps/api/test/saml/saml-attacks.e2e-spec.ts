import supertest from 'supertest';
import { ROUTES } from '@prospect/contract';
import { federatedLinksOf } from '../support/federation-fixtures.js';
import { authEvents, createUser, userByEmail } from '../support/fixtures.js';
import type { TestApp } from '../support/test-app.js';
import { csrfFrom, signInAs, webClient } from '../support/web-client.js';
import { answerFor, postToAcs, refusalsOf, SamlSpec, type SamlTeam, signedInAs, startSignIn } from './support/saml-fixtures.js';
import { SamlIdp } from './support/saml-idp.js';

/**
 * SAML 2.0 sign-in as an attacker sees it (issue #47, item 1, reviewed): the XML signature
 * wrapping variants beyond the first sample, the 2018 NameID comment trick, DTDs (entity
 * expansion, external entities) and oversized answers, metadata that points the browser at a
 * clear-text IdP, sudo mode's sealed answer carried twice, "Test sign-in" in an admin's browser,
 * and an organization deleted while a sign-in is under way. Each is refused with a clear 4xx,
 * nobody signed in.
 */
describe('SAML sign-in under attack', () => {
  const saml = new SamlSpec();
  let api: TestApp;
  beforeAll(async () => (api = await saml.start()));
  afterAll(() => saml.close());
  const { team, expectRefused } = saml;

  /** Starts a sign-in in a new browser and posts the Response XML `make` builds for its request's ID. */
  const postXml = (t: SamlTeam, make: (requestId: string) => string) => saml.answerWith(t, (id) => Buffer.from(make(id)).toString('base64'));

  const assertionOf = (xml: string) => /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(xml)![0];

  it('refuses signature wrapping: an evil assertion with the signed one’s ID, the signed one elsewhere (beside, nested, in Extensions)', async () => {
    const { t, idp } = await team();
    const attacker = t.address('mallory');
    const victim = t.address('victim');
    await createUser(api, { email: victim });
    // The attacker's own genuinely signed answer; its assertion copied with the victim's NameID, the signature kept.
    const wrap = (place: (signed: string, evil: string) => string) => (id: string) => {
      const genuine = idp.responseXml({ ...answerFor(t, attacker, id), assertionId: '_same' });
      const signed = assertionOf(genuine);
      const evil = signed.replace(`>${attacker}<`, `>${victim}<`);
      return genuine.replace(signed, place(signed, evil));
    };
    const variants = [
      wrap((signed, evil) => `${evil}${signed}`),
      wrap((signed, evil) => `${signed}${evil}`),
      wrap((signed, evil) => `<samlp:Extensions>${signed}</samlp:Extensions>${evil}`),
      wrap((signed, evil) => evil.replace('</saml:Subject>', `</saml:Subject><saml:Advice>${signed}</saml:Advice>`)),
      wrap((signed, evil) => evil.replace(/<ds:Signature[\s\S]*<\/ds:Signature>/, (sig) => sig.replace('</ds:Signature>', `<ds:Object>${signed}</ds:Object></ds:Signature>`))),
    ];
    for (const variant of variants) await expectRefused(t, await postXml(t, variant), /signature|assertion/i);
    // A signed Response is refused when an assertion is changed after it was signed, or an unsigned one added.
    const changed = (id: string) => idp.responseXml(answerFor(t, attacker, id, { sign: 'response' })).replace(`>${attacker}<`, `>${victim}<`);
    await expectRefused(t, await postXml(t, changed), /signature/i);
    const added = (id: string) => {
      const signed = idp.responseXml(answerFor(t, attacker, id, { sign: 'response' }));
      return signed.replace('</samlp:Response>', `${assertionOf(idp.responseXml(answerFor(t, victim, id, { sign: 'none' })))}</samlp:Response>`);
    };
    await expectRefused(t, await postXml(t, added), /multiple assertions|signature/i);
    // The genuine signed Response, wrapped in an unsigned one that carries the evil assertion.
    const nestedResponse = (id: string) => {
      const signed = idp.responseXml(answerFor(t, attacker, id, { sign: 'response' }));
      const outer = idp.responseXml(answerFor(t, victim, id, { sign: 'none' }));
      return outer.replace('</samlp:Status>', `</samlp:Status><samlp:Extensions>${signed}</samlp:Extensions>`);
    };
    await expectRefused(t, await postXml(t, nestedResponse), /signature/i);
    expect(await federatedLinksOf(api, { providerId: `saml-${t.orgId}` })).toEqual([]);
  });

  it('reads a NameID with a comment in it whole (the 2018 bug): victim@domain<!---->.evil.test is not victim@domain', async () => {
    const { t, idp } = await team();
    const victim = t.address('victim');
    await createUser(api, { email: victim });
    const trick = `${victim}.evil.test`;
    // Comments are outside what exclusive c14n signs: inserted after signing, the signature still verifies.
    const { res, web } = await postXml(t, (id) => idp.responseXml(answerFor(t, trick, id)).replace(`>${trick}<`, `>${victim}<!---->.evil.test<`));
    expect(res.status).toBe(403);
    expect(await signedInAs(web)).toBeNull();
    expect((await refusalsOf(api, t.orgId)).at(-1)).toMatch(/outside/);
    expect(await federatedLinksOf(api, { providerId: `saml-${t.orgId}` })).toEqual([]);
  });

  it('refuses a SAMLResponse with a DOCTYPE (entity expansion, external entities), and an oversized one, with a clear 4xx', async () => {
    const { t, idp } = await team();
    const email = t.address('dtd');
    const laughs = ['<!ENTITY l0 "lol">', ...Array.from({ length: 9 }, (_, i) => `<!ENTITY l${i + 1} "${`&l${i};`.repeat(10)}">`)].join('');
    // The entity referenced outside the signed assertion (a StatusMessage), where nothing checks the bytes.
    const withDtd = (dtd: string, entity: string) => (id: string) =>
      `<?xml version="1.0"?><!DOCTYPE samlp:Response [${dtd}]>${idp.responseXml(answerFor(t, email, id))}`.replace('</samlp:Status>', `<samlp:StatusMessage>${entity}</samlp:StatusMessage></samlp:Status>`);
    await expectRefused(t, await postXml(t, withDtd(laughs, '&l9;')), /DOCTYPE/);
    const xxe = await postXml(t, withDtd('<!ENTITY file SYSTEM "file:///etc/passwd">', '&file;'));
    await expectRefused(t, xxe, /DOCTYPE/);
    expect(xxe.res.text).not.toContain('root:');
    // Longer than any sign-in's (refused unread), then longer than the body SAML's routes take (413).
    const padded = (size: number) => (id: string) => idp.responseXml(answerFor(t, email, id)).replace('</samlp:Response>', `<!--${'x'.repeat(size)}--></samlp:Response>`);
    await expectRefused(t, await postXml(t, padded(170_000)), /too long/);
    const huge = await postXml(t, padded(400_000));
    expect(huge.res.status).toBe(413);
    expect(await userByEmail(api, email)).toBeNull();
  });

  it('an IdP’s metadata whose single sign-on URL is clear text off loopback is refused (400), through the API and the page', async () => {
    const { t, idp } = await team({});
    const plain = idp.metadataXml().replace(`Location="${idp.url}/sso"`, 'Location="http://idp.example.com/sso"');
    const res = await t.call('PUT', { idpMetadataXml: plain });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/https/);
    const sent = webClient(api);
    expect((await startSignIn(sent, t.slug)).location.startsWith(`${idp.url}/sso?`)).toBe(true);
  });

  it('sudo mode’s sealed answer counts once: the same cookie carried again to /sudo-done is refused', async () => {
    const { t, idp } = await team();
    const email = t.address('sid');
    const web = webClient(api);
    const first = await startSignIn(web, t.slug);
    const signedIn = await postToAcs(web, t.slug, idp.response(answerFor(t, email, first.request.id)));
    expect(signedIn.status).toBe(303);
    const sessionCookie = (signedIn.headers['set-cookie'] as unknown as string[]).filter((c) => !c.startsWith('prospect_saml=')).map((c) => c.split(';')[0]!).join('; ');
    const providerId = `saml-${t.orgId}`;
    const started = SamlIdp.authnRequestOf((await web.send('GET', `/sudo/sso/${providerId}?next=%2Fsettings%2Fsecurity`)).location!);
    const acs = await postToAcs(web, t.slug, idp.response(answerFor(t, email, started.id)));
    expect(acs.status).toBe(303);
    // The ACS clears the sudo flight, then sets its answer: the last, non-empty prospect_saml.
    const flightCookie = (acs.headers['set-cookie'] as unknown as string[]).filter((c) => /^prospect_saml=[^;]/.test(c)).at(-1)!.split(';')[0]!;
    expect((await web.send('GET', acs.location!)).status).toBe(303);
    // The cookie, kept by whoever copied it, carried again in the same session.
    const again = await supertest(api.app.getHttpServer()).get(`/saml/${t.slug}/sudo-done`).set('Cookie', `${sessionCookie}; ${flightCookie}`).redirects(0);
    expect(again.status).toBe(400);
    expect(await authEvents(api, { type: 'web.sudo', detail: { providerId } })).toHaveLength(1);
  });

  it('"Test sign-in" signs nobody in and links nothing, even for a person with an account, and leaves the admin signed in as the admin', async () => {
    const { t, idp } = await team();
    const person = t.address('tina');
    // Tina has signed in through the connection before: her link exists.
    const tina = webClient(api);
    const { request } = await startSignIn(tina, t.slug);
    expect((await postToAcs(tina, t.slug, idp.response(answerFor(t, person, request.id)))).status).toBe(303);
    const links = await federatedLinksOf(api, { providerId: `saml-${t.orgId}` });
    const admin = await signInAs(api, t.admin.email, 'correct horse battery');
    const started = SamlIdp.authnRequestOf((await admin.send('GET', `/orgs/${t.slug}/saml/test`)).location!);
    const worked = await postToAcs(admin, t.slug, idp.response(answerFor(t, person, started.id)));
    expect(worked.text).toContain('Test sign-in worked');
    expect((await admin.send('GET', '/settings/account')).text).toContain(t.admin.email);
    // A new address: no account, no link, no membership.
    const again = SamlIdp.authnRequestOf((await admin.send('GET', `/orgs/${t.slug}/saml/test`)).location!);
    expect((await postToAcs(admin, t.slug, idp.response(answerFor(t, t.address('newcomer'), again.id)))).text).toContain('Test sign-in worked');
    expect(await userByEmail(api, t.address('newcomer'))).toBeNull();
    expect(await federatedLinksOf(api, { providerId: `saml-${t.orgId}` })).toEqual(links);
    expect((await admin.send('GET', '/settings/account')).text).toContain(t.admin.email);
  });

  it('an organization deleted while a sign-in is under way: its IdP’s answer is a 404, nobody signed in', async () => {
    const { t, idp } = await team();
    const web = webClient(api);
    const { request } = await startSignIn(web, t.slug);
    const owner = await signInAs(api, t.owner.email, 'correct horse battery');
    const csrf = csrfFrom((await owner.send('GET', ROUTES.tokensPage)).text);
    expect((await owner.agent.delete(`/api/orgs/${t.slug}`).set('x-csrf-token', csrf)).status).toBe(204);
    const res = await postToAcs(web, t.slug, idp.response(answerFor(t, t.address('late'), request.id)));
    expect(res.status).toBe(404);
    expect(await signedInAs(web)).toBeNull();
    expect(await userByEmail(api, t.address('late'))).toBeNull();
  });
});
