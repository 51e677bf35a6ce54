import { ROUTES } from '@prospect/contract';
import { Mailer } from '../../src/mail/mailer.js';
import { UnitOfWork } from '../../src/database/unit-of-work.js';
import { OrganizationsService } from '../../src/organizations/organizations.service.js';
import { PROVIDER_DISCOVERIES_PER_HOUR } from '../../src/rate-limits/rate-limits.js';
import { UsersService } from '../../src/users/users.service.js';
import { askForReset, latestLink } from '../support/account-flows.js';
import { federatedLinksOf } from '../support/federation-fixtures.js';
import { authEvents, createUser, userByEmail } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { addMember, createOrganization, personWithToken } from '../support/organization-fixtures.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import { markDomainVerified, organizationId, removeDomain } from '../support/verified-domain-fixtures.js';
import { countWebSessions } from '../support/web-session-fixtures.js';
import { postFrom, signInAs, webClient } from '../support/web-client.js';
import { events, type Federation, PROVIDERS, signedInAs, signInThrough, startFederationWithMail } from '../federation/support/federation.js';
import { HttpBrowser } from '../federation/support/http-browser.js';
import { CLIENT_ID, CLIENT_SECRET, TestProvider } from '../federation/support/test-provider.js';

/**
 * Identity providers per organization (issue #44, item 4), against real OpenID providers
 * (node-oidc-provider, one per organization: an issuer belongs to one provider): an organization's
 * admins register one for the domains it has verified only, test its connection, and it signs in
 * addresses of those domains only, checked again at every sign-in; an enforced domain signs in only
 * through it; deleting the organization ends it and the sessions it started.
 */
describe('identity providers of an organization', () => {
  let fed: Federation;
  let smtp: SmtpSink;
  const idps: TestProvider[] = [];
  beforeAll(async () => ({ fed, smtp } = await startFederationWithMail({ configure: false })));
  afterAll(async () => {
    await Promise.all(idps.map((idp) => idp.close()));
    await fed?.close();
  });

  let n = 0;
  /** An organization with an owner, an admin and a member (each with an `orgs` token), the test provider its own, and `domain` verified. */
  async function team(options: { enforceSso?: boolean } = {}) {
    n += 1;
    const owner = await personWithToken(fed.api);
    const admin = await personWithToken(fed.api);
    const member = await personWithToken(fed.api);
    const slug = await createOrganization(fed.api, owner);
    await addMember(fed.api, slug, owner.id, admin, 'admin');
    await addMember(fed.api, slug, owner.id, member, 'member');
    const orgId = await organizationId(fed.api, slug, owner.id);
    const domain = `team${n}.test`;
    await markDomainVerified(fed.api, orgId, domain, options);
    const providerId = `team${n}-sso`;
    const idp = await TestProvider.start([`${fed.api.baseUrl}/login/sso/${providerId}/callback`]);
    idps.push(idp);
    const path = `/api/orgs/${slug}/identity-providers`;
    const call = (method: string, suffix: string, token: string, json?: unknown) => request(fed.api, method, `${path}${suffix}`, { token, json });
    const body = { id: providerId, displayName: `Team ${n} SSO`, issuer: idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, emailDomains: [domain], allowSignUp: true };
    /** A person of the organization's provider, with a verified address of `at` (default: the organization's domain). */
    const person = (name: string, at = domain) => {
      const user = { sub: `${name}-${n}`, email: `${name}${n}@${at}`, email_verified: true, name };
      idp.users.set(user.sub, user);
      return user;
    };
    return { owner, admin, member, slug, orgId, domain, providerId, idp, path, call, body, person };
  }
  type Team = Awaited<ReturnType<typeof team>>;

  /** Registers the team's provider as its admin. */
  async function registered(t: Team) {
    const created = await t.call('POST', '', t.admin.token, t.body);
    expect(created.status).toBe(201);
    return created.body;
  }
  const orgLog = (t: Team) => fed.api.app.get(OrganizationsService).log(t.orgId, 50, 0);

  it('an admin registers one for verified domains only (409 naming the unverified one), tests its connection, and the organization’s log records it', async () => {
    const t = await team();
    const unverified = await t.call('POST', '', t.admin.token, { ...t.body, emailDomains: [t.domain, 'not-verified.test'] });
    expect(unverified.status).toBe(409);
    expect(unverified.body.message).toContain('not-verified.test');
    const enforced = await t.call('POST', '', t.admin.token, { ...t.body, enforce: true });
    expect(enforced.status).toBe(400);
    expect(enforced.body.message).toContain('enforceSso');

    const created = await registered(t);
    expect(created).toMatchObject({ id: t.providerId, issuer: t.idp.issuer, emailDomains: [t.domain], enforce: false, disabled: false, redirectUri: `${fed.api.baseUrl}/login/sso/${t.providerId}/callback` });
    expect((await t.call('GET', '', t.admin.token)).body).toEqual([created]);
    expect((await t.call('GET', `/${t.providerId}`, t.owner.token)).body).toEqual(created);
    // A PATCH cannot add a domain the organization has not verified either.
    const widened = await t.call('PATCH', `/${t.providerId}`, t.admin.token, { emailDomains: [t.domain, 'victim.test'] });
    expect(widened.status).toBe(409);
    expect(widened.body.message).toContain('victim.test');

    const test = await t.call('POST', `/${t.providerId}/test`, t.admin.token);
    expect(test.status).toBe(200);
    expect(test.body).toEqual({
      ok: true,
      issuer: t.idp.issuer,
      authorizationEndpoint: expect.stringMatching(new RegExp(`^${t.idp.issuer}/`)),
      tokenEndpoint: expect.stringMatching(new RegExp(`^${t.idp.issuer}/`)),
      jwksUri: expect.stringMatching(new RegExp(`^${t.idp.issuer}/`)),
      userinfoEndpoint: expect.any(String),
      scopesSupported: expect.arrayContaining(['openid', 'email']),
    });

    // Another organization's admin sees none of it; the instance's sign-in page offers no button for it.
    const other = await team();
    expect((await other.call('GET', '', other.admin.token)).body).toEqual([]);
    expect((await request(fed.api, 'GET', `/api/orgs/${other.slug}/identity-providers/${t.providerId}`, { token: other.admin.token })).status).toBe(404);
    expect((await request(fed.api, 'POST', `/api/orgs/${other.slug}/identity-providers/${t.providerId}/test`, { token: other.admin.token })).status).toBe(404);
    expect((await request(fed.api, 'DELETE', `/api/orgs/${other.slug}/identity-providers/${t.providerId}`, { token: other.admin.token })).status).toBe(404);
    expect((await webClient(fed.api).send('GET', '/login')).text).not.toContain(`Team ${n - 1} SSO`);

    const log = await orgLog(t);
    expect(log.find((e) => e.type === 'org.identity_provider_create')).toMatchObject({ actorEmail: t.admin.email, detail: { providerId: t.providerId, emailDomains: t.domain } });

    // The provider gone away: the test says so in one sentence, and nothing else changes.
    await t.idp.close();
    const down = await t.call('POST', `/${t.providerId}/test`, t.admin.token);
    expect(down.status).toBe(200);
    expect(down.body).toEqual({ ok: false, error: expect.stringContaining('Could not read the OpenID configuration') });
  });

  it(`counts connection tests and registrations per organization: ${PROVIDER_DISCOVERIES_PER_HOUR} an hour, then 429 before the issuer is asked`, async () => {
    const t = await team();
    await registered(t); // one
    for (let i = 1; i < PROVIDER_DISCOVERIES_PER_HOUR; i++) expect((await t.call('POST', `/${t.providerId}/test`, t.admin.token)).body.ok).toBe(true);
    const tested = await t.call('POST', `/${t.providerId}/test`, t.admin.token);
    expect(tested.status).toBe(429);
    expect(Number(tested.headers.get('retry-after'))).toBeGreaterThan(0);
    // A registration is refused before its issuer is asked: this one would otherwise be a 409 (its issuer is taken) after discovery.
    await markDomainVerified(fed.api, t.orgId, `more.${t.domain}`);
    const again = await t.call('POST', '', t.owner.token, { ...t.body, id: `${t.providerId}-again`, emailDomains: [`more.${t.domain}`] });
    expect(again.status).toBe(429);
    expect(again.body.message).toContain(`${PROVIDER_DISCOVERIES_PER_HOUR} an hour`);
    // Another organization counts its own.
    const other = await team();
    await registered(other);
    expect((await other.call('POST', `/${other.providerId}/test`, other.admin.token)).status).toBe(200);
  });

  it('the instance’s admin sees an organization’s provider with its organization, and is pointed there instead of changing it (409)', async () => {
    const t = await team();
    const created = await registered(t);
    expect(created.organization).toEqual({ slug: t.slug, name: expect.any(String) });
    const listed = ((await fed.call('GET', PROVIDERS)).body as Array<{ id: string }>).find((p) => p.id === t.providerId);
    expect(listed).toEqual(created);
    expect((await fed.call('GET', `${PROVIDERS}/${t.providerId}`)).body).toEqual(created);

    for (const [method, json] of [['PATCH', { disabled: true }], ['PATCH', { displayName: 'Taken over' }], ['DELETE', undefined]] as const) {
      const refused = await fed.call(method, `${PROVIDERS}/${t.providerId}`, json);
      expect([method, refused.status]).toEqual([method, 409]);
      expect(refused.body.message).toContain(`/orgs/${t.slug}/identity-providers`);
    }
    expect((await t.call('GET', `/${t.providerId}`, t.admin.token)).body).toEqual(created);

    // The page shows whose it is, with no form that would change it.
    const web = await signInAs(fed.api, fed.admin.email, 'correct horse battery');
    const page = await web.send('GET', '/admin/identity-providers');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<code>/orgs/${t.slug}/identity-providers</code>`);
    expect(page.text).not.toContain(`action="/admin/identity-providers/${t.providerId}`);
    const refusedForm = await postFrom(web, '/admin/identity-providers', `/admin/identity-providers/${t.providerId}/disable`);
    expect([403, 409]).toContain(refusedForm.status);
    expect((await t.call('GET', `/${t.providerId}`, t.admin.token)).body.disabled).toBe(false);
  });

  it('a member and an outsider cannot manage them: 403 naming the role for a member, 404 for an outsider', async () => {
    const t = await team();
    await registered(t);
    const outsider = await personWithToken(fed.api);
    const routes: Array<[string, string, unknown?]> = [
      ['GET', ''],
      ['POST', '', { ...t.body, id: `${t.providerId}-2` }],
      ['GET', `/${t.providerId}`],
      ['PATCH', `/${t.providerId}`, { displayName: 'Taken over' }],
      ['POST', `/${t.providerId}/test`],
      ['DELETE', `/${t.providerId}`],
    ];
    for (const [method, suffix, json] of routes) {
      const asMember = await t.call(method, suffix, t.member.token, json);
      expect([method, suffix, asMember.status]).toEqual([method, suffix, 403]);
      expect(asMember.body.message).toContain('an admin or an owner');
      expect((await t.call(method, suffix, outsider.token, json)).status).toBe(404);
    }
    expect((await t.call('GET', `/${t.providerId}`, t.admin.token)).body.displayName).toBe(t.body.displayName);
  });

  it('signs in an address of a verified domain; an admin’s provider asserting an address of another domain signs nobody in, links nothing, makes no account', async () => {
    const t = await team();
    await registered(t);
    const insider = t.person('insider');
    const browser = new HttpBrowser();
    const first = await signInThrough(browser, fed.api, `/login/sso/${t.providerId}`, insider.sub);
    expect(first.status).toBe(303);
    expect(await signedInAs(browser, fed.api)).toBe(insider.email);

    // The attack: the organization's admin controls the provider, which asserts (as verified) the
    // address of someone of another domain who has an account here.
    const victim = await createUser(fed.api, { email: `victim${n}@victim.test` });
    const forged = t.person('forged', 'victim.test');
    forged.email = victim.email;
    t.idp.users.set(forged.sub, forged);
    const attacker = new HttpBrowser();
    const refused = await signInThrough(attacker, fed.api, `/login/sso/${t.providerId}`, forged.sub);
    expect(refused.status).toBe(403);
    expect(await signedInAs(attacker, fed.api)).toBeNull();
    expect(await federatedLinksOf(fed.api, { subject: forged.sub })).toEqual([]);
    expect(await federatedLinksOf(fed.api, { providerId: t.providerId })).toHaveLength(1);
    // An address of another domain nobody has: no account is made for it either.
    const stranger = t.person('stranger', 'elsewhere.test');
    expect((await signInThrough(new HttpBrowser(), fed.api, `/login/sso/${t.providerId}`, stranger.sub)).status).toBe(403);
    expect(await userByEmail(fed.api, stranger.email)).toBeNull();

    // A linked identity whose provider now asserts an address of another domain is refused too:
    // the organization's provider is asked about its domains at every sign-in, linked or not.
    t.idp.users.set(insider.sub, { ...insider, email: `insider${n}@victim.test` });
    expect((await signInThrough(new HttpBrowser(), fed.api, `/login/sso/${t.providerId}`, insider.sub)).status).toBe(403);
    t.idp.users.set(insider.sub, insider);

    const refusals = await authEvents(fed.api, { type: 'federation.login_refused' });
    expect(refusals.filter((e) => e.detail.providerId === t.providerId).map((e) => e.detail.reason)).toEqual([
      'address outside the provider’s domains',
      'address outside the provider’s domains',
      'address outside the provider’s domains',
    ]);
    // The refusals show in the organization's log.
    expect((await orgLog(t)).filter((e) => e.type === 'federation.login_refused')).toHaveLength(3);

    // The account the link leads to moved to another domain (a mailed address change): the
    // organization's provider no longer signs it in, though it still asserts an address of its domain.
    const linked = (await userByEmail(fed.api, insider.email))!;
    await fed.api.app.get(UnitOfWork).run((tx) => fed.api.app.get(UsersService).setEmailFromLink(tx, linked.id, `moved${n}@elsewhere.test`, new Date()));
    const moved = await signInThrough(new HttpBrowser(), fed.api, `/login/sso/${t.providerId}`, insider.sub);
    expect(moved.status).toBe(403);
    expect((await events(fed.api, 'federation.login_refused')).at(-1)).toMatchObject({ user_id: linked.id, detail: { reason: 'address outside the organization’s verified domains' } });
  });

  it('a domain removed after registration stops its sign-ins at once, for linked people too', async () => {
    const t = await team();
    await registered(t);
    const insider = t.person('insider');
    expect((await signInThrough(new HttpBrowser(), fed.api, `/login/sso/${t.providerId}`, insider.sub)).status).toBe(303);

    await removeDomain(fed.api, t.orgId, t.domain);
    const browser = new HttpBrowser();
    const refused = await signInThrough(browser, fed.api, `/login/sso/${t.providerId}`, insider.sub);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('not one of them now');
    expect(await signedInAs(browser, fed.api)).toBeNull();
    expect((await events(fed.api, 'federation.login_refused')).at(-1)!.detail).toMatchObject({ providerId: t.providerId, reason: 'address outside the organization’s verified domains' });
    // A newcomer of the domain gets no account.
    const newcomer = t.person('newcomer');
    expect((await signInThrough(new HttpBrowser(), fed.api, `/login/sso/${t.providerId}`, newcomer.sub)).status).toBe(403);
    expect(await userByEmail(fed.api, newcomer.email)).toBeNull();

    // Verified again (its DNS record back): sign-ins resume.
    await markDomainVerified(fed.api, t.orgId, t.domain);
    expect((await signInThrough(new HttpBrowser(), fed.api, `/login/sso/${t.providerId}`, insider.sub)).status).toBe(303);
  });

  it('removing a verified domain ends the browser sessions the organization’s provider started for it; another domain’s stay; disabling ends them all', async () => {
    const t = await team();
    const second = `second.${t.domain}`;
    await markDomainVerified(fed.api, t.orgId, second);
    const created = await t.call('POST', '', t.admin.token, { ...t.body, emailDomains: [t.domain, second] });
    expect(created.status).toBe(201);
    const leaving = t.person('leaving');
    const staying = t.person('staying', second);
    const [leavingBrowser, stayingBrowser] = [new HttpBrowser(), new HttpBrowser()];
    expect((await signInThrough(leavingBrowser, fed.api, `/login/sso/${t.providerId}`, leaving.sub)).status).toBe(303);
    expect((await signInThrough(stayingBrowser, fed.api, `/login/sso/${t.providerId}`, staying.sub)).status).toBe(303);

    expect((await request(fed.api, 'DELETE', `/api/orgs/${t.slug}/domains/${t.domain}`, { token: t.admin.token })).status).toBe(204);
    expect(await signedInAs(leavingBrowser, fed.api)).toBeNull();
    expect(await signedInAs(stayingBrowser, fed.api)).toBe(staying.email);
    expect((await orgLog(t)).find((e) => e.type === 'org.domain_remove')).toMatchObject({ actorEmail: t.admin.email, detail: { domain: t.domain, wasVerified: true, sessions: 1 } });

    expect((await t.call('PATCH', `/${t.providerId}`, t.admin.token, { disabled: true })).status).toBe(200);
    expect(await signedInAs(stayingBrowser, fed.api)).toBeNull();
    expect((await orgLog(t)).find((e) => e.type === 'org.identity_provider_update')).toMatchObject({ detail: { disabled: true, sessions: 1 } });
  });

  it('narrowing a provider’s domains ends the browser sessions it started for the dropped domain, as removing the domain does; the kept domain’s stay', async () => {
    const t = await team();
    const kept = `kept.${t.domain}`;
    await markDomainVerified(fed.api, t.orgId, kept);
    expect((await t.call('POST', '', t.admin.token, { ...t.body, emailDomains: [t.domain, kept] })).status).toBe(201);
    const dropped = t.person('dropped');
    const staying = t.person('staying', kept);
    const [droppedBrowser, stayingBrowser, secondDroppedBrowser] = [new HttpBrowser(), new HttpBrowser(), new HttpBrowser()];
    expect((await signInThrough(droppedBrowser, fed.api, `/login/sso/${t.providerId}`, dropped.sub)).status).toBe(303);
    expect((await signInThrough(secondDroppedBrowser, fed.api, `/login/sso/${t.providerId}`, dropped.sub)).status).toBe(303);
    expect((await signInThrough(stayingBrowser, fed.api, `/login/sso/${t.providerId}`, staying.sub)).status).toBe(303);

    // The JSON API's PATCH: the domain stays verified by the organization, the provider no longer lists it.
    expect((await t.call('PATCH', `/${t.providerId}`, t.admin.token, { emailDomains: [kept] })).status).toBe(200);
    expect(await signedInAs(droppedBrowser, fed.api)).toBeNull();
    expect(await signedInAs(secondDroppedBrowser, fed.api)).toBeNull();
    expect(await signedInAs(stayingBrowser, fed.api)).toBe(staying.email);
    expect((await orgLog(t)).find((e) => e.type === 'org.identity_provider_update')).toMatchObject({ actorEmail: t.admin.email, detail: { emailDomains: kept, sessions: 2 } });
    // And its sign-in is refused now, as the ended sessions' would be.
    expect((await signInThrough(new HttpBrowser(), fed.api, `/login/sso/${t.providerId}`, dropped.sub)).status).toBe(403);

    // The page's edit form narrows the same way: the kept domain's session ends when it goes too.
    const web = await signInAs(fed.api, t.admin.email, 'correct horse battery');
    const page = `/orgs/${t.slug}/identity-providers`;
    const form = { displayName: t.body.displayName, clientId: CLIENT_ID, scopes: 'openid email profile', allowSignUp: 'on', mfaAcrValues: '' };
    expect((await postFrom(web, page, `${page}/${t.providerId}`, { ...form, emailDomains: t.domain })).status).toBe(303);
    expect(await signedInAs(stayingBrowser, fed.api)).toBeNull();
    expect((await orgLog(t)).find((e) => e.type === 'org.identity_provider_update')).toMatchObject({ detail: { emailDomains: t.domain, sessions: 1 } });
  });

  it('an enforced domain signs in only through the organization’s enabled provider: /login sends there, no password, no reset mail', async () => {
    const t = await team({ enforceSso: true });
    const person = await createUser(fed.api, { email: `enforced${n}@${t.domain}` });
    const outsider = await createUser(fed.api, { email: `free${n}@example.com` });
    const passwordSignIn = async (email: string) => {
      const web = webClient(fed.api);
      const form = await web.send('GET', '/login');
      return web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email, password: 'correct horse battery' });
    };
    // Enforced, but no provider of the organization for the domain yet: nobody would get in, so nothing is enforced.
    expect((await passwordSignIn(person.email)).status).toBe(303);

    await registered(t);
    const refused = await passwordSignIn(person.email);
    expect(refused.status).toBe(200);
    expect(refused.text).toContain(`signs in with ${t.body.displayName}`);
    const meta = /<meta http-equiv="refresh" content="0;url=([^"]+)">/.exec(refused.text)?.[1]?.replace(/&amp;/g, '&').replace(/&#x3D;/g, '=');
    const onward = new URL(meta!, fed.api.baseUrl);
    expect(onward.pathname).toBe(`/login/sso/${t.providerId}`);
    expect(onward.searchParams.get('login_hint')).toBe(person.email);

    const mailsBefore = smtp.to(person.email).length;
    expect((await askForReset(fed.api, person.email)).status).toBe(200);
    await fed.api.app.get(Mailer).settled();
    expect(smtp.to(person.email).length).toBe(mailsBefore);
    // Another domain keeps its password.
    expect((await passwordSignIn(outsider.email)).status).toBe(303);

    // The provider disabled: it enforces nothing (or nobody of the domain could sign in).
    expect((await t.call('PATCH', `/${t.providerId}`, t.admin.token, { disabled: true })).body.disabled).toBe(true);
    expect((await passwordSignIn(person.email)).status).toBe(303);
    expect((await t.call('PATCH', `/${t.providerId}`, t.admin.token, { disabled: false })).body.disabled).toBe(false);
    expect((await passwordSignIn(person.email)).status).toBe(200);
    // The domain removed: nor does it enforce anything.
    await removeDomain(fed.api, t.orgId, t.domain);
    expect((await passwordSignIn(person.email)).status).toBe(303);
    const updates = (await orgLog(t)).filter((e) => e.type === 'org.identity_provider_update').map((e) => e.detail.disabled);
    expect(updates).toEqual([false, true]);
  });

  it('an invitation to an address of an enforced domain: signed out, the person continues with the organization’s provider (no password sign-up), comes back to the invitation and accepts', async () => {
    const t = await team({ enforceSso: true });
    await registered(t);
    const invited = t.person('invited');
    expect((await request(fed.api, 'POST', `/api/orgs/${t.slug}/invitations`, { token: t.owner.token, json: { email: invited.email, role: 'admin' } })).status).toBe(201);
    const link = await latestLink(fed.api, smtp, invited.email, '/invitations');
    const path = `${link.pathname}${link.search}`;
    const token = link.searchParams.get('token')!;

    const browser = new HttpBrowser();
    const page = await browser.request(`${fed.api.baseUrl}${path}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`Continue with ${t.body.displayName}`);
    expect(page.text).not.toContain('Create account and join');
    expect(page.text).not.toContain('Sign in to accept');
    const href = /<a class="button" href="([^"]+)">Continue with/.exec(page.text)![1]!.replace(/&amp;/g, '&').replace(/&#x3D;/g, '=');
    const onward = new URL(href, fed.api.baseUrl);
    expect(onward.pathname).toBe(`/login/sso/${t.providerId}`);
    expect(onward.searchParams.get('next')).toBe(path);
    expect(onward.searchParams.get('login_hint')).toBe(invited.email);
    expect(page.text).not.toContain('action="/invitations/signup"');
    // A password sign-up posted to the link anyway (this browser's CSRF token from another page) is refused, and makes no account.
    const csrf = HttpBrowser.csrfOf((await browser.request(`${fed.api.baseUrl}/login`)).text);
    const signUp = await browser.request(`${fed.api.baseUrl}/invitations/signup`, { form: { _csrf: csrf, token, name: 'Invited', password: 'correct horse battery' } });
    expect(signUp.status).toBe(403);
    expect(await userByEmail(fed.api, invited.email)).toBeNull();

    const back = await signInThrough(browser, fed.api, `${onward.pathname}${onward.search}`, invited.sub);
    expect(back.status).toBe(303);
    expect(`${back.location!.pathname}${back.location!.search}`).toBe(path);
    const accepting = await browser.request(`${fed.api.baseUrl}${path}`);
    expect(accepting.text).toContain(`Accept and join`);
    const joined = await browser.request(`${fed.api.baseUrl}/invitations`, { form: { _csrf: HttpBrowser.csrfOf(accepting.text), token } });
    expect(joined.status).toBe(303);
    expect(joined.location!.pathname).toBe(`/orgs/${t.slug}`);
    const account = (await userByEmail(fed.api, invited.email))!;
    expect(await fed.api.app.get(OrganizationsService).listFor(account.id, null)).toEqual([expect.objectContaining({ slug: t.slug, role: 'admin' })]);

    // An address of a domain nobody enforces still gets the password forms.
    const free = `free${n}@example.com`;
    expect((await request(fed.api, 'POST', `/api/orgs/${t.slug}/invitations`, { token: t.owner.token, json: { email: free, role: 'member' } })).status).toBe(201);
    const freeLink = await latestLink(fed.api, smtp, free, '/invitations');
    const freePage = await new HttpBrowser().request(`${fed.api.baseUrl}${freeLink.pathname}${freeLink.search}`);
    expect(freePage.text).toContain('Create account and join');
    expect(freePage.text).not.toContain('Continue with');
  });

  it('the page /orgs/{slug}/identity-providers: an admin registers one (refused for an unverified domain), tests its connection and deletes it; a member is refused', async () => {
    const t = await team();
    const page = `/orgs/${t.slug}/identity-providers`;
    const asMember = await signInAs(fed.api, t.member.email, 'correct horse battery');
    const refused = await asMember.send('GET', page);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('Only an admin or an owner');
    expect((await asMember.send('GET', `/orgs/no-such-org-${n}/identity-providers`)).status).toBe(404);

    const web = await signInAs(fed.api, t.admin.email, 'correct horse battery');
    const empty = await web.send('GET', page);
    expect(empty.status).toBe(200);
    expect(empty.text).toContain(`<code>${t.domain}</code>`);
    expect(empty.text).toContain(`href="/orgs/${t.slug}"`);
    const form = { id: t.providerId, displayName: t.body.displayName, preset: 'generic', issuer: t.idp.issuer, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, allowSignUp: 'on' };
    const unverified = await postFrom(web, page, page, { ...form, emailDomains: `${t.domain} not-verified.test` });
    expect(unverified.status).toBe(409);
    expect(unverified.text).toContain('not-verified.test');
    expect((await t.call('GET', '', t.admin.token)).body).toEqual([]);

    const created = await postFrom(web, page, page, { ...form, emailDomains: t.domain });
    expect(created.status).toBe(303);
    const shown = await web.send('GET', created.location!);
    expect(shown.text).toContain(`${fed.api.baseUrl}/login/sso/${t.providerId}/callback`);

    const tested = await postFrom(web, page, `${page}/${t.providerId}/test`);
    expect(tested.status).toBe(200);
    expect(tested.text).toContain('The provider answered');
    expect(tested.text).toContain(`<code>${t.idp.issuer}</code>`);
    expect(tested.text).toMatch(/Token endpoint<\/dt><dd class="url"><code>http:\/\/localhost:\d+\/token<\/code>/);

    const deleted = await postFrom(web, page, `${page}/${t.providerId}/delete`, { confirm: t.providerId });
    expect(deleted.status).toBe(303);
    expect((await t.call('GET', '', t.admin.token)).body).toEqual([]);
    expect((await orgLog(t)).map((e) => e.type).filter((type) => type.startsWith('org.identity_provider'))).toEqual(['org.identity_provider_delete', 'org.identity_provider_create']);
  });

  it('deleting the organization ends its providers and the browser sessions they started', async () => {
    const t = await team();
    await registered(t);
    const insider = t.person('insider');
    const browser = new HttpBrowser();
    expect((await signInThrough(browser, fed.api, `/login/sso/${t.providerId}`, insider.sub)).status).toBe(303);
    const account = (await userByEmail(fed.api, insider.email))!;
    expect(await countWebSessions(fed.api, { userId: account.id, federated: true })).toBe(1);

    const web = await signInAs(fed.api, t.owner.email, 'correct horse battery');
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await web.send('GET', ROUTES.tokensPage)).text)![1]!;
    expect((await web.agent.delete(`/api/orgs/${t.slug}`).set('x-csrf-token', csrf)).status).toBe(204);

    expect(await signedInAs(browser, fed.api)).toBeNull();
    expect(await countWebSessions(fed.api, { userId: account.id, federated: true })).toBe(0);
    expect(await federatedLinksOf(fed.api, { providerId: t.providerId })).toEqual([]);
    expect((await signInThrough(new HttpBrowser(), fed.api, `/login/sso/${t.providerId}`, insider.sub)).status).toBe(404);
    // The account stays (it has no password: its owner sets one with a reset link).
    expect(await userByEmail(fed.api, insider.email)).not.toBeNull();
    expect((await orgLog(t)).find((e) => e.type === 'org.identity_provider_delete')).toMatchObject({ detail: { providerId: t.providerId, sessions: 1, reason: 'organization deleted' } });
  });
});
