import { RetentionService } from '../../src/retention/retention.service.js';
import { ROUTES } from '@prospect/contract';
import { federatedLinksOf } from '../support/federation-fixtures.js';
import { createUser, userByEmail } from '../support/fixtures.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { request } from '../support/http.js';
import { addMember, personWithToken } from '../support/organization-fixtures.js';
import type { TestApp } from '../support/test-app.js';
import { csrfFrom, signInAs, webClient, type WebClient } from '../support/web-client.js';
import { answerFor, assertionUses, expireAssertionUses, hasConnectionRow, linkedSessions as linkedSessionsOf, orgLog, postToAcs, refusalsOf, SamlSpec, samlTeam, startSignIn } from './support/saml-fixtures.js';
import { newSigningKey, SamlIdp } from './support/saml-idp.js';

/**
 * An organization's SAML connection through the API (issue #47): registered from the IdP's
 * metadata (what is missing named in a 400), read, its policy changed, removed (its sessions
 * ending), by the organization's admins only; kept apart from the OpenID providers' doors.
 */
describe('SAML connections', () => {
  const saml = new SamlSpec();
  let api: TestApp;
  beforeAll(async () => (api = await saml.start()));
  afterAll(() => saml.close());

  const linkedSessions = (providerId: string) => linkedSessionsOf(api, providerId);

  const { newIdp } = saml;

  it('PUT answers what to enter at the IdP; GET shows the connection; a member may not', async () => {
    const idp = await newIdp();
    const t = await samlTeam(api, idp, {});
    expect(t.sp).toEqual({ spEntityId: `${api.baseUrl}/saml/${t.slug}/metadata`, acsUrl: `${api.baseUrl}/saml/${t.slug}/acs`, metadataUrl: `${api.baseUrl}/saml/${t.slug}/metadata` });
    const got = await t.call('GET');
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      ...t.sp,
      signInUrl: `${api.baseUrl}/saml/${t.slug}/login`,
      idpEntityId: idp.entityId,
      ssoUrl: `${idp.url}/sso`,
      certificates: [{ subject: 'CN=test-idp', notAfter: expect.any(String), sha256: expect.stringMatching(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/) }],
      enforce: false,
      allowSignUp: false,
      allowIdpInitiated: false,
      secondFactorContexts: [],
      disabled: false,
      linkedAccounts: 0,
    });
    const member = await personWithToken(api);
    await addMember(api, t.slug, t.owner.id, member, 'member');
    expect((await t.call('GET', undefined, member.token)).status).toBe(403);
    expect((await t.call('PUT', { idpMetadataXml: idp.metadataXml() }, member.token)).status).toBe(403);
    const stranger = await personWithToken(api);
    expect((await t.call('GET', undefined, stranger.token)).status).toBe(404);
    // Recorded in the organization's log.
    const rows = (await orgLog(api, t.orgId)).filter((e) => e.type.startsWith('org.identity_provider_')).map((e) => ({ type: e.type, protocol: e.detail.protocol }));
    expect(rows).toEqual([{ type: 'org.identity_provider_create', protocol: 'saml' }]);
  });

  it('refuses metadata that lacks what Prospect needs, naming it (400)', async () => {
    const idp = await newIdp();
    const t = await samlTeam(api, idp, {});
    const put = (idpMetadataXml: string) => t.call('PUT', { idpMetadataXml });
    const good = idp.metadataXml();
    const cases: Array<[string, RegExp]> = [
      ['<not xml', /not well-formed XML/],
      ['<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"><SPSSODescriptor/></EntityDescriptor>', /no IDPSSODescriptor/],
      [good.replace(/ entityID="[^"]+"/, ''), /no entityID/],
      [good.replace(/<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"[^>]+>/, ''), /HTTP-Redirect/],
      [good.replace(/<md:KeyDescriptor[\s\S]*<\/md:KeyDescriptor>/, ''), /no signing certificate/],
      [good.replace(/<ds:X509Certificate>[^<]+/, '<ds:X509Certificate>bm90IGEgY2VydA=='), /not a valid X\.509 certificate/],
      [`<!DOCTYPE x [<!ENTITY a "aaaa">]>${good.replace(/^<\?xml[^>]*>/, '')}`, /DOCTYPE/],
    ];
    for (const [xml, message] of cases) {
      const res = await put(xml);
      expect({ status: res.status, message: res.body.message }).toEqual({ status: 400, message: expect.stringMatching(message) });
    }
    expect((await t.call('PUT', {})).status).toBe(400);
    expect((await t.call('PUT', { idpMetadataXml: 'x'.repeat(100_001) })).status).toBe(400);
    // Entra ID's metadata runs to tens of kB: taken (with its other roles and certificates).
    const big = good.replace('</md:EntityDescriptor>', `<md:Extensions>${'<!-- padding -->'.repeat(3000)}</md:Extensions></md:EntityDescriptor>`);
    expect(big.length).toBeGreaterThan(40_000);
    expect((await put(big)).status).toBe(200);
  });

  it('new metadata of the same IdP rotates its certificates; another IdP, or an entityID taken, is a 409', async () => {
    const idp = await newIdp();
    const t = await samlTeam(api, idp, { allowSignUp: true });
    const rotated = newSigningKey('rotated');
    expect((await t.call('PUT', { idpMetadataXml: idp.metadataXml([idp.signing.cert, rotated.cert]) })).status).toBe(200);
    expect((await t.call('GET')).body.certificates).toHaveLength(2);
    // An answer signed by the new key is accepted now.
    const web = webClient(api);
    const { request: started } = await startSignIn(web, t.slug);
    expect((await postToAcs(web, t.slug, idp.response(answerFor(t, t.address('rot'), started.id, { key: rotated })))).status).toBe(303);

    const other = await newIdp();
    const swap = await t.call('PUT', { idpMetadataXml: other.metadataXml() });
    expect(swap.status).toBe(409);
    expect(swap.body.message).toContain('remove the connection first');
    const another = await samlTeam(api, other, {});
    const taken = await another.call('PUT', { idpMetadataXml: idp.metadataXml() });
    expect(taken.status).toBe(409);
  });

  it('PATCH sets the policy; disabling refuses its sign-ins and ends the sessions it started; DELETE removes it', async () => {
    const idp = await newIdp();
    const t = await samlTeam(api, idp, { allowSignUp: true });
    const patched = await t.call('PATCH', { enforce: true, secondFactorContexts: ['urn:x:mfa'], allowIdpInitiated: true });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ enforce: true, allowSignUp: true, allowIdpInitiated: true, secondFactorContexts: ['urn:x:mfa'] });
    expect((await t.call('PATCH', {})).status).toBe(400);
    expect((await t.call('PATCH', { enforce: 'yes' })).status).toBe(400);
    expect((await t.call('PATCH', { secondFactorContexts: ['has space'] })).status).toBe(400);

    const signIn = async (name: string): Promise<WebClient> => {
      const web = webClient(api);
      const { request: started } = await startSignIn(web, t.slug);
      expect((await postToAcs(web, t.slug, idp.response(answerFor(t, t.address(name), started.id)))).status).toBe(303);
      return web;
    };
    const web = await signIn('una');
    const providerId = `saml-${t.orgId}`;
    expect(await linkedSessions(providerId)).toBe(1);
    expect((await t.call('PATCH', { disabled: true })).body.disabled).toBe(true);
    expect(await linkedSessions(providerId)).toBe(0);
    expect((await web.send('GET', '/settings/account')).status).toBe(303);
    // Its sign-in refused now, and /login no longer sends the domain to it.
    expect((await webClient(api).send('GET', `/saml/${t.slug}/login`)).status).toBe(403);
    await t.call('PATCH', { disabled: false });
    await signIn('una');
    expect((await t.call('DELETE')).status).toBe(204);
    expect(await linkedSessions(providerId)).toBe(0);
    expect((await t.call('GET')).status).toBe(404);
    expect((await t.call('DELETE')).status).toBe(404);
    expect((await webClient(api).send('GET', `/saml/${t.slug}/login`)).status).toBe(404);
  });

  it('is kept out of the OpenID doors: not listed or changed as an OpenID provider, not started at /login/sso', async () => {
    const idp = await newIdp();
    const t = await samlTeam(api, idp, {});
    const providerId = `saml-${t.orgId}`;
    const oidc = await request(api, 'GET', `/api/orgs/${t.slug}/identity-providers`, { token: t.admin.token });
    expect(oidc.body).toEqual([]);
    expect((await request(api, 'PATCH', `/api/orgs/${t.slug}/identity-providers/${providerId}`, { token: t.admin.token, json: { allowSignUp: true } })).status).toBe(404);
    expect((await request(api, 'POST', `/api/orgs/${t.slug}/identity-providers/${providerId}/test`, { token: t.admin.token })).status).toBe(404);
    expect((await webClient(api).send('GET', `/login/sso/${providerId}`)).status).toBe(404);
    // The instance's administrators see it among every provider, as SAML, with its ACS.
    const admin = await createUser(api, { role: 'admin' });
    const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct' })).accessToken;
    const listed = (await request(api, 'GET', '/api/admin/identity-providers', { token: adminToken })).body.find((p: { id: string }) => p.id === providerId);
    expect(listed).toMatchObject({ protocol: 'saml', issuer: idp.entityId, redirectUri: t.sp.acsUrl, organization: { slug: t.slug } });
    expect((await request(api, 'PATCH', `/api/admin/identity-providers/${providerId}`, { token: adminToken, json: { disabled: true } })).status).toBe(409);
  });

  it('a bad SAMLResponse is a clear refusal, never a 500', async () => {
    const idp = await newIdp();
    const t = await samlTeam(api, idp, { allowSignUp: true });
    const web = webClient(api);
    const bodies: Array<Record<string, string>> = [{}, { SAMLResponse: 'not base64 at all %%%' }, { SAMLResponse: Buffer.from('<x').toString('base64') }, { SAMLResponse: Buffer.from('<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"/>').toString('base64') }];
    for (const body of bodies) {
      const res = await web.send('POST', `/saml/${t.slug}/acs`, body);
      expect(res.status).toBe(401);
      expect(res.text).toContain('could not be accepted');
    }
    expect((await web.send('POST', '/saml/no-such-org/acs', { SAMLResponse: 'x' })).status).toBe(404);
    expect(await refusalsOf(api, t.orgId)).toHaveLength(4);
  });

  it('retention purges the uses of expired assertions', async () => {
    const idp = await newIdp();
    const t = await samlTeam(api, idp, { allowSignUp: true });
    const web = webClient(api);
    const { request: started } = await startSignIn(web, t.slug);
    expect((await postToAcs(web, t.slug, idp.response(answerFor(t, t.address('vic'), started.id)))).status).toBe(303);
    const uses = () => assertionUses(api, idp.entityId);
    expect(await uses()).toBe(1);
    await api.app.get(RetentionService).purge();
    expect(await uses()).toBe(1);
    await expireAssertionUses(api, idp.entityId);
    await api.app.get(RetentionService).purge();
    expect(await uses()).toBe(0);
  });

  it('the organization’s deletion removes its connection and ends the sessions it started', async () => {
    const idp = await newIdp();
    const t = await samlTeam(api, idp, { allowSignUp: true });
    const insider = webClient(api);
    const { request: started } = await startSignIn(insider, t.slug);
    expect((await postToAcs(insider, t.slug, idp.response(answerFor(t, t.address('wes'), started.id)))).status).toBe(303);
    const web = await signInAs(api, t.owner.email, 'correct horse battery');
    const csrf = csrfFrom((await web.send('GET', ROUTES.tokensPage)).text);
    expect((await web.agent.delete(`/api/orgs/${t.slug}`).set('x-csrf-token', csrf)).status).toBe(204);
    expect(await hasConnectionRow(api, t.orgId)).toBe(false);
    expect(await federatedLinksOf(api, { providerId: `saml-${t.orgId}` })).toEqual([]);
    expect((await insider.send('GET', '/settings/account')).status).toBe(303);
  });

  it('the page: admins only, forms with the CSRF token; Test sign-in shows the admin why an answer was refused', async () => {
    const idp = await newIdp();
    const t = await samlTeam(api, idp, {});
    const member = await personWithToken(api);
    await addMember(api, t.slug, t.owner.id, member, 'member');
    expect((await (await signInAs(api, member.email, 'correct horse battery')).send('GET', `/orgs/${t.slug}/saml`)).status).toBe(403);
    expect((await (await signInAs(api, member.email, 'correct horse battery')).send('GET', `/orgs/${t.slug}/saml/test`)).status).toBe(403);

    const web = await signInAs(api, t.admin.email, 'correct horse battery');
    const page = await web.send('GET', `/orgs/${t.slug}/saml`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(idp.entityId);
    // A form without its CSRF token changes nothing.
    expect((await web.send('POST', `/orgs/${t.slug}/saml/policy`, { allowSignUp: 'on' })).status).toBe(403);
    expect((await t.call('GET')).body.allowSignUp).toBe(false);
    const saved = await web.send('POST', `/orgs/${t.slug}/saml/policy`, { _csrf: csrfFrom(page.text), allowSignUp: 'on', secondFactorContexts: 'urn:a urn:b' });
    expect(saved.status).toBe(303);
    expect((await t.call('GET')).body).toMatchObject({ allowSignUp: true, enforce: false, secondFactorContexts: ['urn:a', 'urn:b'] });
    const bad = await web.send('POST', `/orgs/${t.slug}/saml`, { _csrf: csrfFrom(page.text), idpMetadataXml: '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"/>' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('no IDPSSODescriptor');

    // Test sign-in: the IdP's unsigned answer comes back; the admin reads the reason, nobody is signed in.
    const started = await web.send('GET', `/orgs/${t.slug}/saml/test`);
    expect(started.status).toBe(303);
    const { id } = SamlIdp.authnRequestOf(started.location!);
    const refused = await postToAcs(web, t.slug, idp.response(answerFor(t, t.address('tess'), id, { sign: 'none' })));
    expect(refused.status).toBe(200);
    expect(refused.text).toContain('Test sign-in refused');
    expect(refused.text).toContain('Invalid signature');
    // And a good one: what it held.
    const again = SamlIdp.authnRequestOf((await web.send('GET', `/orgs/${t.slug}/saml/test`)).location!);
    const worked = await postToAcs(web, t.slug, idp.response(answerFor(t, t.address('tess'), again.id, { authnContextClassRef: 'urn:a' })));
    expect(worked.text).toContain('Test sign-in worked');
    expect(worked.text).toContain(t.address('tess'));
    expect(await userByEmail(api, t.address('tess'))).toBeNull();
  });
});
