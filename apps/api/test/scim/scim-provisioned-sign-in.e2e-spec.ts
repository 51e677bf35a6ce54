import { OrganizationsService } from '../../src/organizations/organizations.service.js';
import { askForReset, latestLink, resetWith } from '../support/account-flows.js';
import { federatedLinksOf } from '../support/federation-fixtures.js';
import { createUser, userByEmail } from '../support/fixtures.js';
import { type JsonResponse, request } from '../support/http.js';
import { createOrganization, personWithToken } from '../support/organization-fixtures.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import { markDomainVerified, organizationId } from '../support/verified-domain-fixtures.js';
import { webClient, type WebClient } from '../support/web-client.js';
import { acmeProvider, type Federation, PROVIDERS, signedInAs, signInThrough, startFederationWithMail } from '../federation/support/federation.js';
import { HttpBrowser } from '../federation/support/http-browser.js';
import { CLIENT_ID, CLIENT_SECRET, TestProvider } from '../federation/support/test-provider.js';
import { answerFor, orgLog, postToAcs, refusalsOf, samlTeam, type SamlTeam, startSignIn } from '../saml/support/saml-fixtures.js';
import { SamlIdp } from '../saml/support/saml-idp.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/**
 * The join of SCIM provisioning and the organization's sign-in (issue #47): "a SCIM-created person
 * exists as an invited member who signs in through the organization's provider". A person the
 * organization's SCIM created, never claimed since, is linked at their first sign-in through the
 * organization's OpenID provider or SAML connection without the mailed proof; every other account
 * of the address keeps the pre-hijack proof; a person the directory deactivated signs in there no more.
 * Real parts: the running API, Postgres, an oidc-provider, the test's SAML IdP, SCIM over raw HTTP.
 */
describe('SCIM-provisioned people signing in through the organization’s provider', () => {
  let fed: Federation;
  let smtp: SmtpSink;
  const closers: Array<{ close(): Promise<void> }> = [];
  beforeAll(async () => ({ fed, smtp } = await startFederationWithMail({ configure: false })));
  afterAll(async () => {
    await Promise.all(closers.map((c) => c.close()));
    await fed?.close();
  });

  let n = 0;
  /**
   * An organization with a verified domain, a SAML connection (its own IdP), an OpenID provider
   * of its own (its own oidc-provider) and a SCIM token; `scim` calls its SCIM service as its directory.
   */
  async function team(): Promise<{ t: SamlTeam; saml: SamlIdp; oidc: TestProvider; providerId: string; scim: (method: string, path: string, body?: unknown) => Promise<JsonResponse> }> {
    n += 1;
    const saml = await SamlIdp.start();
    closers.push(saml);
    const t = await samlTeam(fed.api, saml);
    const providerId = `prov${n}-${Date.now().toString(36)}`;
    const oidc = await TestProvider.start([`${fed.api.baseUrl}/login/sso/${providerId}/callback`]);
    closers.push(oidc);
    const registered = await request(fed.api, 'POST', `/api/orgs/${t.slug}/identity-providers`, {
      token: t.admin.token,
      json: { id: providerId, displayName: `Team ${n} SSO`, issuer: oidc.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, emailDomains: [t.domain], allowSignUp: false },
    });
    expect(registered.status).toBe(201);
    const token = (await request(fed.api, 'POST', `/api/orgs/${t.slug}/scim-tokens`, { token: t.owner.token, json: { label: 'Okta' } })).body.token as string;
    const scim = (method: string, path: string, body?: unknown) =>
      request(fed.api, method, `/scim/v2/${t.slug}${path}`, { token, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/scim+json' } }) });
    return { t, saml, oidc, providerId, scim };
  }

  /** The directory provisions `email` (active); its SCIM id. */
  async function provision(scim: Awaited<ReturnType<typeof team>>['scim'], email: string): Promise<string> {
    const created = await scim('POST', '/Users', { schemas: [USER], userName: email, name: { givenName: 'Ada', familyName: 'Lovelace' }, emails: [{ value: email, primary: true }], externalId: `ext-${email}`, active: true });
    expect(created.status).toBe(201);
    return created.body.id as string;
  }

  /** A person of the OpenID provider's directory with a verified address. */
  const oidcPerson = (oidc: TestProvider, email: string) => {
    const user = { sub: `sub-${email}`, email, email_verified: true, name: 'Ada' };
    oidc.users.set(user.sub, user);
    return user;
  };
  const throughOidc = (browser: HttpBrowser, providerId: string, sub: string) => signInThrough(browser, fed.api, `/login/sso/${providerId}`, sub);
  async function throughSaml(t: SamlTeam, idp: SamlIdp, email: string, web: WebClient = webClient(fed.api)) {
    const { request: authn } = await startSignIn(web, t.slug);
    return { res: await postToAcs(web, t.slug, idp.response(answerFor(t, email, authn.id))), web };
  }
  /** Whose account page this SAML browser sees, or null when it is signed out. */
  const samlSignedInAs = async (web: WebClient) => {
    const page = await web.send('GET', '/settings/account');
    return page.status === 200 ? (/[\w.+-]+@[\w.-]+\.test/.exec(page.text)?.[0] ?? 'an address not of a test domain') : null;
  };
  const membership = (t: SamlTeam, userId: string) => fed.api.app.get(OrganizationsService).membership(t.slug, userId, null);
  const directoryLinks = async (t: SamlTeam) => (await orgLog(fed.api, t.orgId)).filter((e) => e.type === 'federation.link');

  it('OpenID Connect: the person SCIM created signs in at once, linked without a mailed proof, a member with the role the mapping gives', async () => {
    const { t, oidc, providerId, scim } = await team();
    await request(fed.api, 'PATCH', `/api/orgs/${t.slug}/scim`, { json: { groupRoles: [{ group: 'Prospect Admins', role: 'admin' }] }, token: t.owner.token });
    const email = t.address('ada');
    const scimId = await provision(scim, email);
    expect((await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Prospect Admins', members: [{ value: scimId }] })).status).toBe(201);
    const account = (await userByEmail(fed.api, email))!;
    const mailsBefore = smtp.to(email).length;

    const person = oidcPerson(oidc, email);
    const browser = new HttpBrowser();
    const res = await throughOidc(browser, providerId, person.sub);
    expect(res.status).toBe(303);
    expect(res.location?.pathname).not.toBe('/login/link');
    expect(await signedInAs(browser, fed.api)).toBe(email);
    expect(await federatedLinksOf(fed.api, { subject: person.sub })).toEqual([expect.objectContaining({ userId: account.id })]);
    expect(await membership(t, account.id)).toMatchObject({ role: 'admin' });
    expect(smtp.to(email)).toHaveLength(mailsBefore);
    // In the organization's log (and the person's): linked because the directory made the account.
    expect(await directoryLinks(t)).toEqual([expect.objectContaining({ actorEmail: email, detail: expect.objectContaining({ providerId, proof: expect.stringContaining('SCIM') }) })]);

    // The next sign-in goes by the link.
    const again = new HttpBrowser();
    expect((await throughOidc(again, providerId, person.sub)).status).toBe(303);
    expect(await signedInAs(again, fed.api)).toBe(email);
  });

  it('SAML: the person SCIM created signs in at once through the connection, a member', async () => {
    const { t, saml, scim } = await team();
    const email = t.address('bo');
    await provision(scim, email);
    const account = (await userByEmail(fed.api, email))!;
    const { res, web } = await throughSaml(t, saml, email);
    expect(res.status).toBe(303);
    expect(res.location).toBe('/settings/account');
    expect(await samlSignedInAs(web)).toBe(email);
    expect(await federatedLinksOf(fed.api, { subject: email })).toEqual([expect.objectContaining({ userId: account.id })]);
    expect(await membership(t, account.id)).toMatchObject({ role: 'member' });
    expect(await directoryLinks(t)).toHaveLength(1);
  });

  it('an account that existed before the directory linked it is still sent to the proof (/login/link), through either door', async () => {
    const { t, saml, oidc, providerId, scim } = await team();
    const local = await createUser(fed.api, { email: t.address('cy') });
    await provision(scim, local.email);
    expect(await membership(t, local.id)).toMatchObject({ role: 'member' });
    const person = oidcPerson(oidc, local.email);
    const browser = new HttpBrowser();
    const res = await throughOidc(browser, providerId, person.sub);
    expect(res.status).toBe(303);
    expect(res.location?.pathname).toBe('/login/link');
    expect(await signedInAs(browser, fed.api)).toBeNull();
    const viaSaml = await throughSaml(t, saml, local.email);
    expect(viaSaml.res.location).toBe('/login/link');
    expect(await federatedLinksOf(fed.api, { userId: local.id })).toEqual([]);
  });

  it('an account the directory made but someone since claimed (a password set, or another link) keeps the proof', async () => {
    const { t, saml, oidc, providerId, scim } = await team();
    // A password set by a reset link: the account is no longer as the directory made it.
    const withPassword = t.address('dee');
    await provision(scim, withPassword);
    await askForReset(fed.api, withPassword);
    expect((await resetWith(webClient(fed.api), await latestLink(fed.api, smtp, withPassword, '/password/reset'), 'correct horse battery staple')).status).toBe(303);
    const first = await throughOidc(new HttpBrowser(), providerId, oidcPerson(oidc, withPassword).sub);
    expect(first.location?.pathname).toBe('/login/link');

    // Linked through the SAML connection first: the OpenID provider's sign-in is another link, proven first.
    const linkedOnce = t.address('eli');
    await provision(scim, linkedOnce);
    expect((await throughSaml(t, saml, linkedOnce)).res.location).toBe('/settings/account');
    const second = await throughOidc(new HttpBrowser(), providerId, oidcPerson(oidc, linkedOnce).sub);
    expect(second.location?.pathname).toBe('/login/link');
    expect(await federatedLinksOf(fed.api, { subject: `sub-${linkedOnce}` })).toEqual([]);
    expect(await directoryLinks(t)).toHaveLength(1);
  });

  it('the first sign-ins through both doors at once link the account once; the other is asked for the proof', async () => {
    const { t, saml, oidc, providerId, scim } = await team();
    const email = t.address('fay');
    await provision(scim, email);
    const person = oidcPerson(oidc, email);
    const samlBrowser = webClient(fed.api);
    const { request: authn } = await startSignIn(samlBrowser, t.slug);
    const [viaOidc, viaSaml] = await Promise.all([throughOidc(new HttpBrowser(), providerId, person.sub), postToAcs(samlBrowser, t.slug, saml.response(answerFor(t, email, authn.id)))]);
    expect([viaOidc.status, viaSaml.status]).toEqual([303, 303]);
    expect([viaOidc.location?.pathname, viaSaml.location].filter((p) => p === '/login/link')).toHaveLength(1);
    expect(await federatedLinksOf(fed.api, { userId: (await userByEmail(fed.api, email))!.id })).toHaveLength(1);
    expect(await directoryLinks(t)).toHaveLength(1);
  });

  it('another organization’s provider cannot use it (nor can the instance add a provider for the domain)', async () => {
    const { t, scim } = await team();
    const email = t.address('gus');
    await provision(scim, email);
    const account = (await userByEmail(fed.api, email))!;

    // Organization B, with a provider of its own that asserts A's person.
    const ownerB = await personWithToken(fed.api);
    const slugB = await createOrganization(fed.api, ownerB, 'Org B');
    const domainB = `orgb${n}-${Date.now().toString(36)}.test`;
    await markDomainVerified(fed.api, await organizationId(fed.api, slugB, ownerB.id), domainB);
    const providerB = `orgb${n}-sso`;
    const idpB = await TestProvider.start([`${fed.api.baseUrl}/login/sso/${providerB}/callback`]);
    closers.push(idpB);
    const registered = await request(fed.api, 'POST', `/api/orgs/${slugB}/identity-providers`, {
      token: ownerB.token,
      json: { id: providerB, displayName: 'Org B SSO', issuer: idpB.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, emailDomains: [domainB], allowSignUp: true },
    });
    expect(registered.status).toBe(201);
    const refused = await throughOidc(new HttpBrowser(), providerB, oidcPerson(idpB, email).sub);
    expect(refused.status).toBe(403);

    expect((await refusalsOf(fed.api, await organizationId(fed.api, slugB, ownerB.id))).at(-1)).toBe('address outside the provider’s domains');
    // Nor can the instance add a provider of its own for A's verified domain, to sign A's people in past A.
    expect((await fed.call('POST', PROVIDERS, { ...acmeProvider(fed.idp), emailDomains: [t.domain] })).status).toBe(409);
    expect(await federatedLinksOf(fed.api, { userId: account.id })).toEqual([]);
    expect(await directoryLinks(t)).toEqual([]);
  });

  it('a person the directory deactivated cannot sign in through the organization’s provider, linked or not; reactivated, they can; deleted, the proof is back', async () => {
    const { t, saml, oidc, providerId, scim } = await team();
    // Never signed in, then deactivated (the account stays enabled: deactivateDisablesAccount is off).
    const never = t.address('hal');
    const neverId = await provision(scim, never);
    expect((await scim('PATCH', `/Users/${neverId}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] })).status).toBe(200);
    const neverAccount = (await userByEmail(fed.api, never))!;
    expect(neverAccount.disabledAt).toBeNull();
    const refused = await throughOidc(new HttpBrowser(), providerId, oidcPerson(oidc, never).sub);
    expect(refused.status).toBe(403);
    expect((await throughSaml(t, saml, never)).res.status).toBe(403);
    expect(await federatedLinksOf(fed.api, { userId: neverAccount.id })).toEqual([]);

    // Signed in once (linked), then deactivated: the link no longer signs them in.
    const linked = t.address('ivy');
    const linkedId = await provision(scim, linked);
    const person = oidcPerson(oidc, linked);
    expect((await throughOidc(new HttpBrowser(), providerId, person.sub)).status).toBe(303);
    await scim('PATCH', `/Users/${linkedId}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] });
    const browser = new HttpBrowser();
    expect((await throughOidc(browser, providerId, person.sub)).status).toBe(403);
    expect(await signedInAs(browser, fed.api)).toBeNull();
    expect((await refusalsOf(fed.api, t.orgId)).filter((r) => r === 'deactivated by the organization’s directory')).toHaveLength(3);

    // Reactivated: a member again, and the link signs them in.
    await scim('PATCH', `/Users/${linkedId}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true } }] });
    const back = new HttpBrowser();
    expect((await throughOidc(back, providerId, person.sub)).status).toBe(303);
    expect(await signedInAs(back, fed.api)).toBe(linked);

    // Deleted from the directory: no longer provisioned, no longer a member; the account is an
    // ordinary one of the address, so the never-linked person's sign-in asks for the proof.
    expect((await scim('DELETE', `/Users/${neverId}`)).status).toBe(204);
    expect(await membership(t, neverAccount.id)).toBeFalsy();
    const afterDelete = await throughOidc(new HttpBrowser(), providerId, `sub-${never}`);
    expect(afterDelete.location?.pathname).toBe('/login/link');
  });
});
