import { CLI_CLIENT_ID, OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { createUser } from '../support/fixtures.js';
import { slowInserts } from '../support/slow-inserts.js';
import { get, post, request } from '../support/http.js';
import { addMember, createOrganization, personWithToken } from '../support/organization-fixtures.js';
import { markDomainVerified, organizationId } from '../support/verified-domain-fixtures.js';
import { signInAs, type WebClient, webClient } from '../support/web-client.js';
import { answerFor as samlAnswerFor, postToAcs, samlTeam, startSignIn } from '../saml/support/saml-fixtures.js';
import { SamlIdp } from '../saml/support/saml-idp.js';
import { authorizationParams, pkce, tokenRequest } from '../oauth/code-flow-support.js';
import { type Federation, signInThrough, startFederation } from './support/federation.js';
import { HttpBrowser } from './support/http-browser.js';
import { CLIENT_ID, CLIENT_SECRET, TestProvider } from './support/test-provider.js';

/**
 * A credential ends with the state it was issued for: a CLI device login (or the CLI's code
 * grant) approved in a browser session signed in through an organization's provider (OpenID
 * Connect or SAML) ends when that session would, whatever ends it: the provider disabled, its
 * domains narrowed, the organization's domain removed. Its access token answers 401 at once and its refresh token no longer refreshes.
 * The same person's device login approved from a password session stays.
 */
describe('grants approved through an organization’s provider', () => {
  let fed: Federation;
  const closers: Array<{ close(): Promise<void> }> = [];
  beforeAll(async () => {
    fed = await startFederation({ configure: false });
  });
  afterAll(async () => {
    await Promise.all(closers.map((c) => c.close()));
    await fed?.close();
  });

  /** A device login: started by the CLI, approved by `approve` (given its user code), collected; its token pair. */
  async function deviceLogin(approve: (userCode: string) => Promise<number>) {
    const start = await post(fed.api, ROUTES.deviceStart, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop' });
    expect(start.status).toBe(200);
    expect(await approve(start.body.userCode)).toBe(200);
    const polled = await post(fed.api, ROUTES.devicePoll, { deviceCode: start.body.deviceCode });
    expect(polled.body.status).toBe('authorized');
    return { accessToken: polled.body.accessToken as string, refreshToken: polled.body.refreshToken as string };
  }
  /** Approving on the device page in a browser without a screen (signed in through an OpenID provider). */
  const approvedIn = (browser: HttpBrowser) => async (userCode: string) => {
    const page = await browser.request(`${fed.api.baseUrl}/device?user_code=${userCode}`);
    return (await browser.request(`${fed.api.baseUrl}/device/approve`, { form: { _csrf: HttpBrowser.csrfOf(page.text), user_code: userCode } })).status;
  };
  /** Approving on the device page in a cookie-keeping client. */
  const approvedWith = (web: WebClient) => async (userCode: string) => {
    const page = await web.send('GET', `/device?user_code=${userCode}`);
    return (await web.send('POST', '/device/approve', { _csrf: web.csrfFrom(page.text), user_code: userCode })).status;
  };
  /** `prospect auth:login --web`: the CLI's own client's authorization code, approved in `web` (first party: no consent page); its token pair. */
  async function codeGrant(web: WebClient) {
    const redirectUri = 'http://127.0.0.1:53682/callback';
    const { verifier, challenge } = pkce();
    const params = authorizationParams(CLI_CLIENT_ID, redirectUri, challenge, { scope: 'profile', state: 's' });
    const answer = await web.send('GET', `${OAUTH_ROUTES.authorize}?${new URLSearchParams(params)}`, undefined, { 'sec-fetch-site': 'none' });
    expect(answer.status).toBe(303);
    const code = new URL(answer.location!).searchParams.get('code')!;
    const tokens = await tokenRequest(fed.api, { grant_type: 'authorization_code', client_id: CLI_CLIENT_ID, code, redirect_uri: redirectUri, code_verifier: verifier });
    expect(tokens.status).toBe(200);
    return { accessToken: tokens.body.access_token as string, refreshToken: tokens.body.refresh_token as string };
  }
  /** Whether the CLI's pair still works: its access token at /api/cli/auth/me, then its refresh token (last: it is rotated). */
  async function works(pair: { accessToken: string; refreshToken: string }) {
    const me = (await get(fed.api, ROUTES.me, pair.accessToken)).status;
    const refreshed = await post(fed.api, ROUTES.refresh, { refreshToken: pair.refreshToken });
    if (refreshed.status === 200) pair.refreshToken = refreshed.body.refreshToken;
    return { me, refresh: refreshed.status };
  }
  const WORKS = { me: 200, refresh: 200 };
  const ENDED = { me: 401, refresh: 401 };

  /** An organization with an owner and an admin, `domains` verified. */
  async function organization(domains: string[]) {
    const owner = await personWithToken(fed.api);
    const admin = await personWithToken(fed.api);
    const slug = await createOrganization(fed.api, owner, `Grants ${domains[0]}`);
    await addMember(fed.api, slug, owner.id, admin, 'admin');
    const orgId = await organizationId(fed.api, slug, owner.id);
    for (const domain of domains) await markDomainVerified(fed.api, orgId, domain);
    return { owner, admin, slug, orgId };
  }

  it('OpenID Connect: narrowing the provider’s domains ends the grants its sessions approved for the dropped domain; disabling it ends the rest; a password session’s grant stays', async () => {
    const [dropped, kept] = ['oidc-dropped.test', 'oidc-kept.test'];
    const org = await organization([dropped, kept]);
    const providerId = 'grants-oidc';
    const idp = await TestProvider.start([`${fed.api.baseUrl}/login/sso/${providerId}/callback`]);
    closers.push(idp);
    const path = `/api/orgs/${org.slug}/identity-providers`;
    const body = { id: providerId, displayName: 'Grants SSO', issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, emailDomains: [dropped, kept], allowSignUp: true };
    expect((await request(fed.api, 'POST', path, { token: org.admin.token, json: body })).status).toBe(201);
    const person = (sub: string, domain: string) => {
      const user = { sub, email: `${sub}@${domain}`, email_verified: true, name: sub };
      idp.users.set(sub, user);
      return user;
    };
    const signedInThrough = async (sub: string) => {
      const browser = new HttpBrowser();
      expect((await signInThrough(browser, fed.api, `/login/sso/${providerId}`, sub)).status).toBe(303);
      return browser;
    };

    // Ann (dropped domain) and Kim (kept domain), each with an account made by the provider.
    const ann = person('ann', dropped);
    const kim = person('kim', kept);
    const annCli = await deviceLogin(approvedIn(await signedInThrough(ann.sub)));
    const kimCli = await deviceLogin(approvedIn(await signedInThrough(kim.sub)));
    // Pat (kept domain) has a password account, linked to the provider by proving it.
    const pat = person('pat', kept);
    await createUser(fed.api, { email: pat.email });
    const linking = new HttpBrowser();
    expect((await signInThrough(linking, fed.api, `/login/sso/${providerId}`, pat.sub)).location?.pathname).toBe('/login/link');
    const form = await linking.request(`${fed.api.baseUrl}/login/link`);
    expect((await linking.request(`${fed.api.baseUrl}/login/link/password`, { form: { _csrf: HttpBrowser.csrfOf(form.text), password: 'correct horse battery' } })).status).toBe(303);
    const patThroughProvider = await deviceLogin(approvedIn(await signedInThrough(pat.sub)));
    const patWithPassword = await deviceLogin(approvedWith(await signInAs(fed.api, pat.email, 'correct horse battery')));
    for (const pair of [annCli, kimCli, patThroughProvider, patWithPassword]) expect(await works(pair)).toEqual(WORKS);

    // The provider no longer signs in the dropped domain: Ann's grant ends with her sessions.
    expect((await request(fed.api, 'PATCH', `${path}/${providerId}`, { token: org.admin.token, json: { emailDomains: [kept] } })).status).toBe(200);
    expect(await works(annCli)).toEqual(ENDED);
    expect(await works(kimCli)).toEqual(WORKS);
    expect(await works(patThroughProvider)).toEqual(WORKS);

    // Disabled: every grant its sessions approved ends; the one Pat approved signed in with a password stays.
    expect((await request(fed.api, 'PATCH', `${path}/${providerId}`, { token: org.admin.token, json: { disabled: true } })).status).toBe(200);
    expect(await works(kimCli)).toEqual(ENDED);
    expect(await works(patThroughProvider)).toEqual(ENDED);
    expect(await works(patWithPassword)).toEqual(WORKS);
  });

  it('an approval under way when its provider is disabled: the disabling waits for its grant and ends it', async () => {
    const domain = 'oidc-race.test';
    const org = await organization([domain]);
    const providerId = 'grants-race';
    const idp = await TestProvider.start([`${fed.api.baseUrl}/login/sso/${providerId}/callback`]);
    closers.push(idp);
    const path = `/api/orgs/${org.slug}/identity-providers`;
    const body = { id: providerId, displayName: 'Race SSO', issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, emailDomains: [domain], allowSignUp: true };
    expect((await request(fed.api, 'POST', path, { token: org.admin.token, json: body })).status).toBe(201);
    idp.users.set('ray', { sub: 'ray', email: `ray@${domain}`, email_verified: true, name: 'Ray' });
    const browser = new HttpBrowser();
    expect((await signInThrough(browser, fed.api, `/login/sso/${providerId}`, 'ray')).status).toBe(303);

    const start = await post(fed.api, ROUTES.deviceStart, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop' });
    // The approval's grant is held half a second in its INSERT, the approving session's row locked:
    // the disabling, sent then, deletes that session only after the grant is committed, then ends it.
    const slow = await slowInserts(fed.api, 'grants');
    try {
      const approving = approvedIn(browser)(start.body.userCode);
      await slow.reached();
      const disabling = request(fed.api, 'PATCH', `${path}/${providerId}`, { token: org.admin.token, json: { disabled: true } });
      expect(await approving).toBe(200);
      expect((await disabling).status).toBe(200);
    } finally {
      await slow.remove();
    }
    const polled = await post(fed.api, ROUTES.devicePoll, { deviceCode: start.body.deviceCode });
    expect(polled.body.status).toBe('denied');
  });

  it('SAML: the organization’s domain removed, then the connection disabled, end the grants its sessions approved; a password session’s grant stays', async () => {
    const idp = await SamlIdp.start();
    closers.push(idp);
    const t = await samlTeam(fed.api, idp);
    /** A browser signed in through the connection as `email` (an account of the address proven with its password first, when `password`). */
    const signedInThrough = async (email: string) => {
      const web = webClient(fed.api);
      const { request: authn } = await startSignIn(web, t.slug);
      const res = await postToAcs(web, t.slug, idp.response(samlAnswerFor(t, email, authn.id)));
      expect(res.status).toBe(303);
      return web;
    };
    const dee = t.address('dee');
    const deeWeb = await signedInThrough(dee);
    const deeCli = await deviceLogin(approvedWith(deeWeb));
    const deeCodeGrant = await codeGrant(deeWeb);
    // Eve has a password account, linked by proving it; then she signs in through the connection.
    const eve = t.address('eve');
    await createUser(fed.api, { email: eve });
    const linking = await signedInThrough(eve);
    const form = await linking.send('GET', '/login/link');
    expect((await linking.send('POST', '/login/link/password', { _csrf: linking.csrfFrom(form.text), password: 'correct horse battery' })).status).toBe(303);
    const eveThroughSaml = await deviceLogin(approvedWith(await signedInThrough(eve)));
    const eveWithPassword = await deviceLogin(approvedWith(await signInAs(fed.api, eve, 'correct horse battery')));
    for (const pair of [deeCli, deeCodeGrant, eveThroughSaml, eveWithPassword]) expect(await works(pair)).toEqual(WORKS);

    // The organization no longer has the domain: what the connection's sessions approved for it ends.
    expect((await request(fed.api, 'DELETE', `/api/orgs/${t.slug}/domains/${t.domain}`, { token: t.admin.token })).status).toBe(204);
    expect(await works(deeCli)).toEqual(ENDED);
    expect(await works(deeCodeGrant)).toEqual(ENDED);
    expect(await works(eveThroughSaml)).toEqual(ENDED);
    expect(await works(eveWithPassword)).toEqual(WORKS);

    // The domain verified again, Dee signs in and approves again; disabling the connection ends that one.
    await markDomainVerified(fed.api, t.orgId, t.domain);
    const deeBrowser = await signedInThrough(dee);
    const deeAgain = await deviceLogin(approvedWith(deeBrowser));
    expect(await works(deeAgain)).toEqual(WORKS);
    // And one approved there that the CLI has not collected yet.
    const uncollected = await post(fed.api, ROUTES.deviceStart, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop' });
    expect(await approvedWith(deeBrowser)(uncollected.body.userCode)).toBe(200);
    expect((await t.call('PATCH', { disabled: true })).status).toBe(200);
    expect(await works(deeAgain)).toEqual(ENDED);
    const late = await post(fed.api, ROUTES.devicePoll, { deviceCode: uncollected.body.deviceCode });
    expect(late.body.status).not.toBe('authorized');
    expect(late.body.accessToken).toBeUndefined();
    expect(await works(eveWithPassword)).toEqual(WORKS);
  });
});
