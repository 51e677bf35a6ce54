import { ROUTES } from '@prospect/contract';
import { authorizedPoll, createUser } from '../support/fixtures.js';
import { get, post, request } from '../support/http.js';
import { addMember, createOrganization, orgsToken, personWithToken } from '../support/organization-fixtures.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { UsersService } from '../../src/users/users.service.js';
import { waitFor } from '../support/eventually.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { markDomainVerified, organizationId, removeDomain } from '../support/verified-domain-fixtures.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

let domains = 0;

/**
 * SCIM 2.0 provisioning per organization (issue #47), as a directory's validator drives it (Okta's
 * SCIM test plan: create, get by filter, get by id, replace, deactivate with PATCH, reactivate,
 * delete, groups), with raw HTTP against the running service, and as an attacker would try it.
 */
describe('SCIM provisioning', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp();
  });
  afterAll(() => api?.close());

  /** A SCIM request as a directory sends it: application/scim+json, its bearer token. */
  const scim = (method: string, path: string, token: string | undefined, body?: unknown) =>
    request(api, method, path, {
      ...(token === undefined ? {} : { token }),
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      headers: body === undefined ? {} : { 'content-type': 'application/scim+json' },
    });

  /** An organization with a verified domain and a SCIM token: its owner, slug, domain, token and base path. */
  async function provisionedOrganization(name = 'Acme') {
    const domain = `acme${++domains}-${Date.now().toString(36)}.example`;
    const owner = await personWithToken(api, { email: `owner@${domain}` });
    const slug = await createOrganization(api, owner, name);
    await markDomainVerified(api, await organizationId(api, slug, owner.id), domain);
    const created = await post(api, `/api/orgs/${slug}/scim-tokens`, { label: 'Okta' }, owner.token);
    expect(created.status).toBe(201);
    return { owner, slug, domain, token: created.body.token as string, tokenId: created.body.id as string, base: `/scim/v2/${slug}` };
  }

  const userBody = (userName: string, extra: Record<string, unknown> = {}) => ({
    schemas: [USER],
    userName,
    name: { givenName: 'Ada', familyName: 'Lovelace' },
    emails: [{ value: userName, type: 'work', primary: true }],
    externalId: `ext-${userName}`,
    active: true,
    ...extra,
  });
  const deactivation = { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] };
  const reactivation = { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true } }] };
  /**
   * The organization's event types once the stream shows every one of `expected` (an event shows once
   * every older transaction on the Postgres server has ended, other test files' too).
   */
  async function settledEvents(slug: string, owner: { token: string }, query: string, expected: string[], atLeast = 0) {
    let events: Array<{ type: string; data: Record<string, unknown> }> = [];
    await waitFor(`events ${expected.join(', ')}`, async () => {
      events = (await get(api, `/api/orgs/${slug}/events?limit=100${query}`, owner.token)).body.events;
      return events.length >= atLeast && expected.every((type) => events.some((e) => e.type === type));
    }, 30_000);
    return events;
  }
  const roleOf = async (slug: string, owner: { token: string }, userId: string) =>
    ((await get(api, `/api/orgs/${slug}/members`, owner.token)).body as Array<{ user: { id: string }; role: string }>).find((m) => m.user.id === userId)?.role;

  it('tokens: made by an admin, shown once (no-store, prscim_), listed without secrets, revoked', async () => {
    const { owner, slug, token, tokenId, base } = await provisionedOrganization();
    expect(token).toMatch(/^prscim_[A-Za-z0-9_-]{43}$/);
    const listed = await get(api, `/api/orgs/${slug}/scim-tokens`, owner.token);
    expect(listed.body).toEqual([{ id: tokenId, label: 'Okta', createdAt: expect.any(String), createdBy: owner.email, lastUsedAt: null }]);
    expect(JSON.stringify(listed.body)).not.toContain(token);
    const again = await post(api, `/api/orgs/${slug}/scim-tokens`, {}, owner.token);
    expect(again.headers.get('cache-control')).toBe('no-store');
    expect((await scim('GET', `${base}/Users`, token)).status).toBe(200);
    expect((await get(api, `/api/orgs/${slug}/scim-tokens`, owner.token)).body.find((t: { id: string }) => t.id === tokenId).lastUsedAt).toEqual(expect.any(String));

    // A member may not; a non-member does not see the organization.
    const member = await personWithToken(api);
    await addMember(api, slug, owner.id, member, 'member');
    expect((await post(api, `/api/orgs/${slug}/scim-tokens`, {}, member.token)).status).toBe(403);
    expect((await get(api, `/api/orgs/${slug}/scim-tokens`, (await personWithToken(api)).token)).status).toBe(404);

    expect((await request(api, 'DELETE', `/api/orgs/${slug}/scim-tokens/${tokenId}`, { token: owner.token })).status).toBe(204);
    const refused = await scim('GET', `${base}/Users`, token);
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ schemas: [ERROR], status: '401', detail: expect.any(String) });
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await scim('GET', `${base}/Users`, again.body.token)).status).toBe(200);
  });

  it('a token made by an admin who is no longer one stops working', async () => {
    const { owner, slug, base } = await provisionedOrganization();
    const admin = await personWithToken(api);
    await addMember(api, slug, owner.id, admin, 'admin');
    const token = (await post(api, `/api/orgs/${slug}/scim-tokens`, {}, admin.token)).body.token;
    expect((await scim('GET', `${base}/Users`, token)).status).toBe(200);
    expect((await request(api, 'PATCH', `/api/orgs/${slug}/members/${admin.id}`, { json: { role: 'member' }, token: owner.token })).status).toBe(204);
    expect((await scim('GET', `${base}/Users`, token)).status).toBe(401);
  });

  it('Okta’s test plan: discovery, create, get by filter, get by id, replace, deactivate, reactivate, delete', async () => {
    const { owner, slug, domain, token, base } = await provisionedOrganization();

    const config = await scim('GET', `${base}/ServiceProviderConfig`, token);
    expect(config.status).toBe(200);
    expect(config.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(config.body).toMatchObject({ patch: { supported: true }, filter: { supported: true }, bulk: { supported: false } });
    expect((await scim('GET', `${base}/ResourceTypes`, token)).body.Resources.map((r: { id: string }) => r.id)).toEqual(['User', 'Group']);
    expect((await scim('GET', `${base}/Schemas`, token)).body.Resources.map((r: { id: string }) => r.id)).toEqual([USER, GROUP]);

    const address = `ada@${domain}`;
    // Okta first asks whether the person exists.
    const none = await scim('GET', `${base}/Users?filter=${encodeURIComponent(`userName eq "${address}"`)}&startIndex=1&count=100`, token);
    expect(none.body).toEqual({ schemas: [LIST], totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });

    const created = await scim('POST', `${base}/Users`, token, userBody(address));
    expect(created.status).toBe(201);
    expect(created.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(created.body).toMatchObject({ schemas: [USER], id: expect.any(String), userName: address, active: true, externalId: `ext-${address}`, name: { givenName: 'Ada', familyName: 'Lovelace' } });
    expect(created.body.meta).toMatchObject({ resourceType: 'User', location: expect.stringMatching(new RegExp(`${base}/Users/${created.body.id}$`)) });
    const id = created.body.id as string;

    // The account exists, without a password, as a member.
    const members = (await get(api, `/api/orgs/${slug}/members`, owner.token)).body as Array<{ user: { id: string; email: string }; role: string }>;
    const person = members.find((m) => m.user.email === address)!;
    expect(person.role).toBe('member');

    const byName = await scim('GET', `${base}/Users?filter=${encodeURIComponent(`userName eq "${address.toUpperCase()}"`)}`, token);
    expect(byName.body).toMatchObject({ totalResults: 1, Resources: [{ id, userName: address }] });
    const byExternal = await scim('GET', `${base}/Users?filter=${encodeURIComponent(`externalId eq "ext-${address}"`)}`, token);
    expect(byExternal.body).toMatchObject({ totalResults: 1, Resources: [{ id }] });
    expect((await scim('GET', `${base}/Users/${id}`, token)).body).toMatchObject({ id, userName: address, active: true });

    const replaced = await scim('PUT', `${base}/Users/${id}`, token, userBody(address, { name: { givenName: 'Augusta', familyName: 'King' }, externalId: 'okta-42' }));
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ name: { givenName: 'Augusta', familyName: 'King' }, externalId: 'okta-42', active: true });

    const deactivated = await scim('PATCH', `${base}/Users/${id}`, token, deactivation);
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.active).toBe(false);
    expect(await roleOf(slug, owner, person.user.id)).toBeUndefined();

    const reactivated = await scim('PATCH', `${base}/Users/${id}`, token, reactivation);
    expect(reactivated.body.active).toBe(true);
    expect(await roleOf(slug, owner, person.user.id)).toBe('member');

    // Entra ID: a path, and a string for the boolean.
    const entra = await scim('PATCH', `${base}/Users/${id}`, token, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] });
    expect(entra.status).toBe(200);
    expect(entra.body.active).toBe(false);
    expect(await roleOf(slug, owner, person.user.id)).toBeUndefined();
    expect((await scim('PATCH', `${base}/Users/${id}`, token, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'True' }, { op: 'Replace', path: 'name.givenName', value: 'Ada' }] })).body)
      .toMatchObject({ active: true, name: { givenName: 'Ada' } });

    expect((await scim('DELETE', `${base}/Users/${id}`, token)).status).toBe(204);
    expect(await roleOf(slug, owner, person.user.id)).toBeUndefined();
    const gone = await scim('GET', `${base}/Users/${id}`, token);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ schemas: [ERROR], status: '404', detail: expect.any(String) });

    // Paging.
    for (const n of [1, 2, 3]) expect((await scim('POST', `${base}/Users`, token, userBody(`p${n}@${domain}`))).status).toBe(201);
    const page = await scim('GET', `${base}/Users?startIndex=2&count=2`, token);
    expect(page.body).toMatchObject({ totalResults: 3, startIndex: 2, itemsPerPage: 2 });
    expect(page.body.Resources.map((r: { userName: string }) => r.userName)).toEqual([`p2@${domain}`, `p3@${domain}`]);

    // Everything is in the organization's log, and each request in the provisioning log.
    const events = await settledEvents(slug, owner, '', ['scim.token_created', 'scim.user_provisioned', 'scim.user_updated', 'scim.user_deactivated', 'scim.user_reactivated', 'scim.user_deleted']);
    expect(events.find((e) => e.type === 'scim.user_provisioned')!.data).toMatchObject({ userName: address, linked: false, role: 'member' });
    await waitFor('the provisioning log', async () => (await get(api, `/api/orgs/${slug}/scim/log`, owner.token)).body.some((e: { method: string; status: number }) => e.method === 'DELETE' && e.status === 204));
    const log = (await get(api, `/api/orgs/${slug}/scim/log`, owner.token)).body;
    expect(log).toContainEqual({ at: expect.any(String), method: 'POST', resource: '/Users', status: 201, outcome: address });
  });

  it('groups map to roles as the admins set, and follow adds and removes', async () => {
    const { owner, slug, domain, token, base } = await provisionedOrganization();
    // No mapping yet: an admin made by hand and then provisioned stays an admin.
    const admin = await createUser(api, { email: `hand@${domain}` });
    await addMember(api, slug, owner.id, admin, 'admin');
    expect((await scim('POST', `${base}/Users`, token, userBody(admin.email))).status).toBe(201);
    expect(await roleOf(slug, owner, admin.id)).toBe('admin');
    const ada = (await scim('POST', `${base}/Users`, token, userBody(`ada@${domain}`))).body;
    const bob = (await scim('POST', `${base}/Users`, token, userBody(`bob@${domain}`))).body;
    const accountOf = async (userName: string) => ((await get(api, `/api/orgs/${slug}/members`, owner.token)).body as Array<{ user: { id: string; email: string } }>).find((m) => m.user.email === userName)!.user.id;
    const adaId = await accountOf(`ada@${domain}`);
    const bobId = await accountOf(`bob@${domain}`);

    const mapping = await request(api, 'PATCH', `/api/orgs/${slug}/scim`, { json: { groupRoles: [{ group: 'Prospect Admins', role: 'admin' }] }, token: owner.token });
    expect(mapping.status).toBe(200);
    expect(mapping.body).toMatchObject({ endpoint: expect.stringMatching(new RegExp(`${base}$`)), deactivateDisablesAccount: false, groupRoles: [{ group: 'Prospect Admins', role: 'admin' }] });

    const group = await scim('POST', `${base}/Groups`, token, { schemas: [GROUP], displayName: 'Prospect Admins', members: [{ value: ada.id }] });
    expect(group.status).toBe(201);
    expect(group.body).toMatchObject({ displayName: 'Prospect Admins', members: [{ value: ada.id, display: `ada@${domain}` }] });
    expect(await roleOf(slug, owner, adaId)).toBe('admin');
    // The mapping now decides for every provisioned person: the hand-made admin is in no mapped group.
    expect(await roleOf(slug, owner, admin.id)).toBe('member');
    expect((await scim('GET', `${base}/Groups?filter=${encodeURIComponent('displayName eq "prospect admins"')}&excludedAttributes=members`, token)).body)
      .toMatchObject({ totalResults: 1, Resources: [{ id: group.body.id, displayName: 'Prospect Admins' }] });

    // Okta adds and removes members with PATCH.
    const add = await scim('PATCH', `${base}/Groups/${group.body.id}`, token, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: bob.id }] }] });
    expect(add.status).toBe(200);
    expect(await roleOf(slug, owner, bobId)).toBe('admin');
    const remove = await scim('PATCH', `${base}/Groups/${group.body.id}`, token, { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${ada.id}"]` }] });
    expect(remove.status).toBe(200);
    expect(remove.body.members).toEqual([expect.objectContaining({ value: bob.id })]);
    expect(await roleOf(slug, owner, adaId)).toBe('member');
    // An unknown member is refused.
    const stranger = await scim('PATCH', `${base}/Groups/${group.body.id}`, token, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: '00000000-0000-4000-8000-000000000000' }] }] });
    expect(stranger.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidValue' });

    // A mapping without the group demotes its members; an empty one leaves roles to the admins.
    await request(api, 'PATCH', `/api/orgs/${slug}/scim`, { json: { groupRoles: [{ group: 'Sales', role: 'admin' }] }, token: owner.token });
    expect(await roleOf(slug, owner, bobId)).toBe('member');
    await request(api, 'PATCH', `/api/orgs/${slug}/scim`, { json: { groupRoles: [{ group: 'prospect admins', role: 'admin' }] }, token: owner.token });
    expect(await roleOf(slug, owner, bobId)).toBe('admin');
    await request(api, 'PATCH', `/api/orgs/${slug}/scim`, { json: { groupRoles: [] }, token: owner.token });
    expect(await roleOf(slug, owner, bobId)).toBe('admin');
    await request(api, 'PATCH', `/api/orgs/${slug}/scim`, { json: { groupRoles: [{ group: 'Prospect Admins', role: 'admin' }] }, token: owner.token });
    expect((await scim('DELETE', `${base}/Groups/${group.body.id}`, token)).status).toBe(204);
    expect(await roleOf(slug, owner, bobId)).toBe('member');
    expect((await scim('GET', `${base}/Groups/${group.body.id}`, token)).status).toBe(404);
  });

  it('refuses bad input with SCIM’s error body, never a 500', async () => {
    const { slug, domain, token, base } = await provisionedOrganization();
    const badJson = await scim('POST', `${base}/Users`, token, '{"userName": ');
    expect(badJson.status).toBe(400);
    expect(badJson.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(badJson.body).toEqual({ schemas: [ERROR], status: '400', scimType: 'invalidSyntax', detail: expect.any(String) });

    for (const filter of ['userName eq', 'userName co "ada"', 'title eq "x"', 'userName eq "a" or userName eq "b"', '((']) {
      const res = await scim('GET', `${base}/Users?filter=${encodeURIComponent(filter)}`, token);
      expect({ filter, status: res.status, body: res.body }).toEqual({ filter, status: 400, body: { schemas: [ERROR], status: '400', scimType: 'invalidFilter', detail: expect.any(String) } });
    }
    expect((await scim('GET', `${base}/Users?count=many`, token)).body).toMatchObject({ status: '400', scimType: 'invalidValue' });

    const outside = await scim('POST', `${base}/Users`, token, userBody('ada@elsewhere.example'));
    expect(outside.body).toMatchObject({ schemas: [ERROR], status: '400', scimType: 'invalidValue' });
    expect((await scim('POST', `${base}/Users`, token, userBody('not-an-address'))).body).toMatchObject({ status: '400', scimType: 'invalidValue' });
    expect((await scim('POST', `${base}/Users`, token, { schemas: [USER] })).body).toMatchObject({ status: '400', scimType: 'invalidValue' });
    expect((await scim('POST', `${base}/Users`, token, [1, 2])).body).toMatchObject({ status: '400', scimType: 'invalidSyntax' });
    expect((await scim('POST', `${base}/Users`, token, userBody(`ada@${domain}`, { active: 'perhaps' }))).body).toMatchObject({ status: '400', scimType: 'invalidValue' });

    const ada = await scim('POST', `${base}/Users`, token, userBody(`ada@${domain}`));
    expect(ada.status).toBe(201);
    expect((await scim('POST', `${base}/Users`, token, userBody(`ADA@${domain}`))).body).toMatchObject({ status: '409', scimType: 'uniqueness' });
    expect((await scim('PATCH', `${base}/Users/${ada.body.id}`, token, { Operations: [] })).body).toMatchObject({ status: '400', scimType: 'invalidSyntax' });
    expect((await scim('PATCH', `${base}/Users/${ada.body.id}`, token, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'userName', value: `eve@${domain}` }] })).body)
      .toMatchObject({ status: '400', scimType: 'mutability' });
    expect((await scim('GET', `${base}/Users/not-a-uuid`, token)).body).toMatchObject({ status: '404' });
    expect((await scim('GET', `${base}/Users`, undefined)).body).toMatchObject({ status: '401' });
    expect((await scim('GET', `${base}/Users`, 'prscim_nope')).status).toBe(401);
    // A person's token is no SCIM token.
    expect((await scim('GET', `${base}/Users`, (await personWithToken(api)).token)).status).toBe(401);
    expect((await get(api, `/api/orgs/${slug}`, token)).status).toBe(401);
  });

  it('a token of one organization cannot touch another', async () => {
    const a = await provisionedOrganization('A');
    const b = await provisionedOrganization('B');
    const inB = (await scim('POST', `${b.base}/Users`, b.token, userBody(`ada@${b.domain}`))).body;
    expect((await scim('GET', `${b.base}/Users`, a.token)).status).toBe(401);
    expect((await scim('POST', `${b.base}/Users`, a.token, userBody(`eve@${b.domain}`))).status).toBe(401);
    expect((await scim('GET', `${a.base}/Users/${inB.id}`, a.token)).status).toBe(404);
    expect((await scim('PATCH', `${a.base}/Users/${inB.id}`, a.token, deactivation)).status).toBe(404);
    expect((await scim('DELETE', `${a.base}/Users/${inB.id}`, a.token)).status).toBe(404);
    // A's own verified domain is not B's: A cannot provision B's people into A either.
    expect((await scim('POST', `${a.base}/Users`, a.token, userBody(`eve@${b.domain}`))).body).toMatchObject({ status: '400', scimType: 'invalidValue' });
    expect((await scim('GET', `${b.base}/Users/${inB.id}`, b.token)).body.active).toBe(true);
  });

  it('a deactivated person’s CLI token and refresh token stop acting for the organization at the next request; the account goes too when configured', async () => {
    const { owner, slug, domain, token, base } = await provisionedOrganization();
    const person = await createUser(api, { email: `carol@${domain}` });
    const cli = (await authorizedPoll(api, person)).body;
    const linked = await scim('POST', `${base}/Users`, token, userBody(person.email));
    expect(linked.status).toBe(201);
    expect((await get(api, `/api/orgs/${slug}`, cli.accessToken)).status).toBe(200);

    expect((await scim('PATCH', `${base}/Users/${linked.body.id}`, token, deactivation)).status).toBe(200);
    expect((await get(api, `/api/orgs/${slug}`, cli.accessToken)).status).toBe(404);
    expect((await get(api, ROUTES.me, cli.accessToken)).body.organizations).toEqual([]);
    const refreshed = (await post(api, ROUTES.refresh, { refreshToken: cli.refreshToken })).body;
    expect((await get(api, `/api/orgs/${slug}/members`, refreshed.accessToken)).status).toBe(404);

    // Reactivated: a member again, but what was issued before the deactivation stays out (issue #47:
    // a credential ends with the state it was issued for); a new login acts for the organization.
    expect((await scim('PATCH', `${base}/Users/${linked.body.id}`, token, reactivation)).status).toBe(200);
    expect((await get(api, `/api/orgs/${slug}`, refreshed.accessToken)).status).toBe(404);
    expect((await get(api, ROUTES.me, refreshed.accessToken)).body.organizations).toEqual([]);
    const refreshedAgain = (await post(api, ROUTES.refresh, { refreshToken: refreshed.refreshToken })).body;
    expect((await get(api, `/api/orgs/${slug}`, refreshedAgain.accessToken)).status).toBe(404);
    const relogin = (await authorizedPoll(api, person)).body;
    expect((await get(api, `/api/orgs/${slug}`, relogin.accessToken)).status).toBe(200);
    // Then, with deactivateDisablesAccount, a deactivation disables the account.
    expect((await request(api, 'PATCH', `/api/orgs/${slug}/scim`, { json: { deactivateDisablesAccount: true }, token: owner.token })).status).toBe(200);
    expect((await scim('PATCH', `${base}/Users/${linked.body.id}`, token, deactivation)).status).toBe(200);
    expect((await get(api, ROUTES.me, relogin.accessToken)).status).toBe(401);
    expect((await post(api, ROUTES.refresh, { refreshToken: relogin.refreshToken })).status).toBeGreaterThanOrEqual(400);
    const deactivations = await settledEvents(slug, owner, '&types=scim.user_deactivated', ['scim.user_deactivated'], 2);
    expect(deactivations.map((e) => e.data.accountDisabled).sort()).toEqual([false, true]);

    // Reactivation enables the account it disabled.
    expect((await scim('PATCH', `${base}/Users/${linked.body.id}`, token, reactivation)).status).toBe(200);
    const again = (await authorizedPoll(api, person)).body;
    expect((await get(api, `/api/orgs/${slug}`, again.accessToken)).status).toBe(200);
  });

  it('deleted by the directory, then provisioned again: the old CLI token and its refresh stay out; a new login acts (issue #47)', async () => {
    const { slug, domain, token, base } = await provisionedOrganization();
    const person = await createUser(api, { email: `erin@${domain}` });
    const linked = (await scim('POST', `${base}/Users`, token, userBody(person.email))).body;
    const cli = (await authorizedPoll(api, person)).body;
    expect((await get(api, `/api/orgs/${slug}`, cli.accessToken)).status).toBe(200);

    expect((await scim('DELETE', `${base}/Users/${linked.id}`, token)).status).toBe(204);
    expect((await scim('POST', `${base}/Users`, token, userBody(person.email))).status).toBe(201);
    expect((await get(api, `/api/orgs/${slug}`, cli.accessToken)).status).toBe(404);
    expect((await get(api, ROUTES.me, cli.accessToken)).body.organizations).toEqual([]);
    const refreshed = (await post(api, ROUTES.refresh, { refreshToken: cli.refreshToken })).body;
    expect((await get(api, `/api/orgs/${slug}/members`, refreshed.accessToken)).status).toBe(404);
    expect((await get(api, `/api/orgs/${slug}`, (await authorizedPoll(api, person)).body.accessToken)).status).toBe(200);
  });

  it('a person of another organization too keeps their account when deactivated here', async () => {
    const { owner, slug, domain, token, base } = await provisionedOrganization();
    await request(api, 'PATCH', `/api/orgs/${slug}/scim`, { json: { deactivateDisablesAccount: true }, token: owner.token });
    const person = await personWithToken(api, { email: `dan@${domain}` });
    const other = await createOrganization(api, person, 'Side project');
    const linked = (await scim('POST', `${base}/Users`, token, userBody(person.email))).body;
    expect((await scim('PATCH', `${base}/Users/${linked.id}`, token, deactivation)).status).toBe(200);
    expect((await get(api, `/api/orgs/${other}`, person.token)).status).toBe(200);
    expect((await get(api, `/api/orgs/${slug}`, person.token)).status).toBe(404);
  });

  it('never links an account that has not verified the address, and never removes the last owner', async () => {
    const { owner, slug, domain, token, base } = await provisionedOrganization();
    await createUser(api, { email: `squatter@${domain}`, emailVerified: false });
    expect((await scim('POST', `${base}/Users`, token, userBody(`squatter@${domain}`))).body).toMatchObject({ status: '409', scimType: 'uniqueness' });

    const ownerResource = (await scim('POST', `${base}/Users`, token, userBody(owner.email))).body;
    expect(await roleOf(slug, owner, owner.id)).toBe('owner');
    const refused = await scim('PATCH', `${base}/Users/${ownerResource.id}`, token, deactivation);
    expect(refused.body).toMatchObject({ schemas: [ERROR], status: '409', scimType: 'mutability' });
    expect((await scim('DELETE', `${base}/Users/${ownerResource.id}`, token)).body).toMatchObject({ status: '409', scimType: 'mutability' });
    expect(await roleOf(slug, owner, owner.id)).toBe('owner');
    expect((await scim('GET', `${base}/Users/${ownerResource.id}`, token)).body.active).toBe(true);
  });

  it('two deactivations at once are fine: both answered, one membership removed once; one of two creates wins', async () => {
    const { owner, slug, domain, token, base } = await provisionedOrganization();
    const creates = await Promise.all([1, 2, 3].map(() => scim('POST', `${base}/Users`, token, userBody(`ada@${domain}`))));
    expect(creates.map((c) => c.status).sort()).toEqual([201, 409, 409]);
    expect(creates.filter((c) => c.status === 409).map((c) => c.body.scimType)).toEqual(['uniqueness', 'uniqueness']);
    const ada = creates.find((c) => c.status === 201)!.body;
    const answers = await Promise.all([1, 2, 3, 4].map(() => scim('PATCH', `${base}/Users/${ada.id}`, token, deactivation)));
    expect(answers.map((a) => [a.status, a.body.active])).toEqual([[200, false], [200, false], [200, false], [200, false]]);
    const events = await settledEvents(slug, owner, '&types=scim.user_deactivated,member.removed', ['scim.user_deactivated', 'member.removed']);
    expect(events.map((e) => e.type).sort()).toEqual(['member.removed', 'scim.user_deactivated']);
  });

  it('counts failed tokens per address and organization before looking them up', async () => {
    const { base, token } = await provisionedOrganization();
    const guesses = await Promise.all(Array.from({ length: 40 }, (_, i) => scim('GET', `${base}/Users`, `prscim_${String(i).padStart(43, 'x')}`)));
    const statuses = guesses.map((g) => g.status);
    expect(statuses.filter((s) => s === 401)).toHaveLength(30);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    const limited = guesses.find((g) => g.status === 429)!;
    expect(limited.body).toMatchObject({ schemas: [ERROR], status: '429' });
    expect(limited.headers.get('retry-after')).toEqual(expect.any(String));
    // Even the right token waits now: the address is refused before any token is looked up.
    expect((await scim('GET', `${base}/Users`, token)).status).toBe(429);
    // Another organization's directory from the same address (a vendor's shared one) is not blocked.
    const other = await provisionedOrganization('Other');
    expect((await scim('GET', `${other.base}/Users`, other.token)).status).toBe(200);
  });

  it('an admin’s token cannot remove an owner (admins never do); an owner’s token can remove one who is not the last', async () => {
    const { owner, slug, domain, token: ownersToken, base } = await provisionedOrganization();
    const second = await personWithToken(api, { email: `second-owner@${domain}` });
    await addMember(api, slug, owner.id, second, 'owner');
    const admin = await personWithToken(api);
    await addMember(api, slug, owner.id, admin, 'admin');
    const adminsToken = (await post(api, `/api/orgs/${slug}/scim-tokens`, {}, admin.token)).body.token;
    // The admin cannot remove the second owner through the members API…
    expect((await request(api, 'DELETE', `/api/orgs/${slug}/members/${second.id}`, { token: admin.token })).status).toBe(403);
    // …nor through a token of theirs: PATCH, PUT or DELETE.
    const linked = (await scim('POST', `${base}/Users`, adminsToken, userBody(second.email))).body;
    for (const [method, body] of [['PATCH', deactivation], ['PUT', userBody(second.email, { active: false })], ['DELETE', undefined]] as const) {
      const refused = await scim(method, `${base}/Users/${linked.id}`, adminsToken, body);
      expect({ method, status: refused.status, body: refused.body }).toEqual({ method, status: 403, body: { schemas: [ERROR], status: '403', detail: expect.stringMatching(/owner/) } });
    }
    expect(await roleOf(slug, owner, second.id)).toBe('owner');
    expect((await scim('GET', `${base}/Users/${linked.id}`, adminsToken)).body.active).toBe(true);
    // The owner’s token may (the directory deprovisions an owner who left; not the last one).
    expect((await scim('PATCH', `${base}/Users/${linked.id}`, ownersToken, deactivation)).status).toBe(200);
    expect(await roleOf(slug, owner, second.id)).toBeUndefined();
  });

  it('reactivation does not enable an account an instance administrator disabled after the directory did', async () => {
    const { owner, slug, domain, token, base } = await provisionedOrganization();
    expect((await request(api, 'PATCH', `/api/orgs/${slug}/scim`, { json: { deactivateDisablesAccount: true }, token: owner.token })).status).toBe(200);
    const person = await personWithToken(api, { email: `mallory@${domain}` });
    const linked = (await scim('POST', `${base}/Users`, token, userBody(person.email))).body;
    expect((await scim('PATCH', `${base}/Users/${linked.id}`, token, deactivation)).status).toBe(200);
    expect((await api.app.get(UsersService).findById(person.id))!.disabledAt).not.toBeNull();
    // The instance's administrator enables the account, then disables it for a reason of their own.
    const admin = await createUser(api, { role: 'admin' });
    const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
    expect((await request(api, 'PATCH', `/api/admin/users/${person.id}`, { json: { disabled: false }, token: adminToken })).status).toBe(200);
    expect((await request(api, 'PATCH', `/api/admin/users/${person.id}`, { json: { disabled: true }, token: adminToken })).status).toBe(200);
    const reactivated = await scim('PATCH', `${base}/Users/${linked.id}`, token, reactivation);
    expect(reactivated.status).toBe(200);
    expect((await api.app.get(UsersService).findById(person.id))!.disabledAt).not.toBeNull();
    expect((await get(api, ROUTES.me, (await orgsToken(api, person.id)).toString())).status).toBe(401);
  });

  it('a reactivation needs the address’s domain to be the organization’s still: once another organization verified it, refused', async () => {
    const a = await provisionedOrganization('A');
    const person = await personWithToken(api, { email: `alice@${a.domain}` });
    const linked = (await scim('POST', `${a.base}/Users`, a.token, userBody(person.email))).body;
    expect((await scim('PATCH', `${a.base}/Users/${linked.id}`, a.token, deactivation)).status).toBe(200);
    // A removes the domain; B, who holds it now, verifies it.
    await removeDomain(api, await organizationId(api, a.slug, a.owner.id), a.domain);
    const bOwner = await personWithToken(api);
    const b = await createOrganization(api, bOwner, 'B');
    await markDomainVerified(api, await organizationId(api, b, bOwner.id), a.domain);
    for (const [method, body] of [['PATCH', reactivation], ['PUT', userBody(person.email, { active: true })]] as const) {
      const refused = await scim(method, `${a.base}/Users/${linked.id}`, a.token, body);
      expect({ method, body: refused.body }).toMatchObject({ method, body: { schemas: [ERROR], status: '400', scimType: 'invalidValue' } });
    }
    expect((await get(api, `/api/orgs/${a.slug}`, person.token)).status).toBe(404);
  });

  it('a PATCH cannot reach the server’s Object.prototype (scim-patch 0.8.3 walks __proto__, constructor and inherited names)', async () => {
    const { domain, token, base } = await provisionedOrganization();
    const ada = (await scim('POST', `${base}/Users`, token, userBody(`ada@${domain}`))).body;
    const group = (await scim('POST', `${base}/Groups`, token, { schemas: [GROUP], displayName: 'Engineers' })).body;
    const attempts = [
      { op: 'add', path: '__proto__.scimPolluted', value: 'yes' },
      { op: 'replace', path: '__proto__.scimPolluted', value: 'yes' },
      { op: 'add', path: 'constructor.prototype.scimPolluted', value: 'yes' },
      { op: 'add', path: 'name.__proto__.scimPolluted', value: 'yes' },
      { op: 'add', path: 'toString.scimPolluted', value: 'yes' },
      { op: 'add', path: 'urn:ietf:params:scim:schemas:core:2.0:User:__proto__.scimPolluted', value: 'yes' },
      { op: 'add', value: { 'toString.scimPolluted': 'yes' } },
      { op: 'add', value: { '__proto__.scimPolluted': 'yes' } },
      { op: 'add', value: { name: { 'valueOf.scimPolluted': 'yes' } } },
    ];
    for (const [i, operation] of attempts.entries()) {
      // Sent as raw JSON so that a "__proto__" key arrives as the key it is.
      const body = `{"schemas":["${PATCH}"],"Operations":[${JSON.stringify(operation)}]}`;
      for (const path of [`${base}/Users/${ada.id}`, `${base}/Groups/${group.id}`]) {
        const res = await scim('PATCH', path, token, body);
        expect({ i, path, status: res.status, scimType: res.body?.scimType }).toEqual({ i, path, status: 400, scimType: 'invalidPath' });
      }
    }
    const probe = {} as Record<string, unknown>;
    expect({ own: probe.scimPolluted, toString: (probe.toString as unknown as Record<string, unknown>).scimPolluted, valueOf: (probe.valueOf as unknown as Record<string, unknown>).scimPolluted })
      .toEqual({ own: undefined, toString: undefined, valueOf: undefined });
    // An ordinary PATCH still works.
    const renamed = await scim('PATCH', `${base}/Users/${ada.id}`, token, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'name.givenName', value: 'Augusta' }] });
    expect(renamed.body.name.givenName).toBe('Augusta');
  });

  it('many PATCHes, PUTs and DELETEs at once on one person, and creates racing deletes: no 500, one consistent end', async () => {
    const { owner, slug, domain, token, base } = await provisionedOrganization();
    const person = await personWithToken(api, { email: `busy@${domain}` });
    const id = (await scim('POST', `${base}/Users`, token, userBody(person.email))).body.id;
    const storm = await Promise.all([
      ...[0, 1, 2, 3].map(() => scim('PATCH', `${base}/Users/${id}`, token, deactivation)),
      ...[0, 1, 2].map(() => scim('PATCH', `${base}/Users/${id}`, token, reactivation)),
      ...[0, 1].map(() => scim('PUT', `${base}/Users/${id}`, token, userBody(person.email, { displayName: 'Busy' }))),
      ...[0, 1, 2].map(() => scim('DELETE', `${base}/Users/${id}`, token)),
    ]);
    for (const res of storm) expect([200, 204, 404]).toContain(res.status);
    expect(storm.filter((r) => r.status === 204)).toHaveLength(1);
    expect((await scim('GET', `${base}/Users/${id}`, token)).status).toBe(404);
    expect(await roleOf(slug, owner, person.id)).toBeUndefined();
    expect((await get(api, `/api/orgs/${slug}`, person.token)).status).toBe(404);

    // A burst of creates (each reads the organization's domains under its lock, on its own connection).
    const burst = await Promise.all(Array.from({ length: 16 }, (_, i) => scim('POST', `${base}/Users`, token, userBody(`burst${i}@${domain}`))));
    expect(burst.map((r) => r.status)).toEqual(Array(16).fill(201));

    // Creates racing deletes of what they create: whatever wins, the membership is what the directory's row says.
    for (let round = 0; round < 3; round++) {
      const address = `race${round}@${domain}`;
      const [created] = await Promise.all([scim('POST', `${base}/Users`, token, userBody(address)), scim('GET', `${base}/Users?filter=${encodeURIComponent(`userName eq "${address}"`)}`, token)]);
      expect(created.status).toBe(201);
      const results = await Promise.all([scim('DELETE', `${base}/Users/${created.body.id}`, token), scim('POST', `${base}/Users`, token, userBody(address)), scim('PATCH', `${base}/Users/${created.body.id}`, token, deactivation)]);
      for (const res of results) expect(res.status).toBeLessThan(500);
      const listed = (await scim('GET', `${base}/Users?filter=${encodeURIComponent(`userName eq "${address}"`)}`, token)).body.Resources as Array<{ id: string; active: boolean }>;
      const userId = (await api.app.get(UsersService).findByEmail(address))!.id;
      expect(await roleOf(slug, owner, userId)).toBe(listed.some((r) => r.active) ? 'member' : undefined);
    }
  });

  it('a token ends with its maker’s removal or disabled account; a member reads, makes and revokes none', async () => {
    const { owner, slug, base, tokenId } = await provisionedOrganization();
    const removed = await personWithToken(api);
    await addMember(api, slug, owner.id, removed, 'admin');
    const removedsToken = (await post(api, `/api/orgs/${slug}/scim-tokens`, {}, removed.token)).body.token;
    const disabled = await personWithToken(api);
    await addMember(api, slug, owner.id, disabled, 'admin');
    const disabledsToken = (await post(api, `/api/orgs/${slug}/scim-tokens`, {}, disabled.token)).body.token;
    expect((await scim('GET', `${base}/Users`, removedsToken)).status).toBe(200);
    expect((await scim('GET', `${base}/Users`, disabledsToken)).status).toBe(200);

    expect((await request(api, 'DELETE', `/api/orgs/${slug}/members/${removed.id}`, { token: owner.token })).status).toBe(204);
    expect((await scim('GET', `${base}/Users`, removedsToken)).status).toBe(401);
    const admin = await createUser(api, { role: 'admin' });
    const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
    expect((await request(api, 'PATCH', `/api/admin/users/${disabled.id}`, { json: { disabled: true }, token: adminToken })).status).toBe(200);
    expect((await scim('GET', `${base}/Users`, disabledsToken)).status).toBe(401);
    const member = await personWithToken(api);
    await addMember(api, slug, owner.id, member, 'member');
    expect((await get(api, `/api/orgs/${slug}/scim-tokens`, member.token)).status).toBe(403);
    expect((await get(api, `/api/orgs/${slug}/scim`, member.token)).status).toBe(403);
    expect((await get(api, `/api/orgs/${slug}/scim/log`, member.token)).status).toBe(403);
    expect((await request(api, 'PATCH', `/api/orgs/${slug}/scim`, { json: { groupRoles: [{ group: 'Everyone', role: 'admin' }] }, token: member.token })).status).toBe(403);
    expect((await request(api, 'DELETE', `/api/orgs/${slug}/scim-tokens/${tokenId}`, { token: member.token })).status).toBe(403);
  });

  it('NUL characters, deep and huge bodies are SCIM 4xx, never a 500', async () => {
    const { domain, token, base } = await provisionedOrganization();
    const ada = (await scim('POST', `${base}/Users`, token, userBody(`ada@${domain}`))).body;
    const group = (await scim('POST', `${base}/Groups`, token, { schemas: [GROUP], displayName: 'Engineers' })).body;
    const refusals = {
      filterUser: await scim('GET', `${base}/Users?filter=${encodeURIComponent('userName eq "a\u0000b"')}`, token),
      filterExternal: await scim('GET', `${base}/Users?filter=${encodeURIComponent('externalId eq "a\u0000b"')}`, token),
      filterGroup: await scim('GET', `${base}/Groups?filter=${encodeURIComponent('displayName eq "a\u0000b"')}`, token),
      createExternal: await scim('POST', `${base}/Users`, token, userBody(`bob@${domain}`, { externalId: 'x\u0000y' })),
      createName: await scim('POST', `${base}/Users`, token, userBody(`bob@${domain}`, { displayName: 'Bob\u0000' })),
      patchName: await scim('PATCH', `${base}/Users/${ada.id}`, token, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'x\u0000' }] }),
      createGroup: await scim('POST', `${base}/Groups`, token, { schemas: [GROUP], displayName: 'G\u0000' }),
      renameGroup: await scim('PATCH', `${base}/Groups/${group.id}`, token, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'G\u0000' }] }),
      deep: await scim('POST', `${base}/Users`, token, `${'['.repeat(5000)}${']'.repeat(5000)}`),
      huge: await scim('POST', `${base}/Users`, token, userBody(`bob@${domain}`, { displayName: 'x'.repeat(5_000_000) })),
    };
    // Unicode in the address: made or refused, never a 500.
    for (const userName of [`😀@${domain}`, `a\u200bb@${domain}`, `ädä@${domain}`, `a\u202eb@${domain}`, `ada@${domain.toUpperCase()}`, `x@${domain}\u0301`, `${'a'.repeat(250)}@${domain}`]) {
      const res = await scim('POST', `${base}/Users`, token, userBody(userName));
      expect({ userName, status: res.status < 500, schemas: res.body?.schemas }).toEqual({ userName, status: true, schemas: [res.status === 201 ? USER : ERROR] });
    }
    for (const [what, res] of Object.entries(refusals)) {
      expect({ what, status: res.status >= 400 && res.status < 500, schemas: res.body?.schemas }).toEqual({ what, status: true, schemas: [ERROR] });
    }
    const paging = await scim('GET', `${base}/Users?startIndex=-1&count=100000`, token);
    expect(paging.status).toBe(200);
    expect(paging.body).toMatchObject({ startIndex: 1, totalResults: 1 });
  });
});
