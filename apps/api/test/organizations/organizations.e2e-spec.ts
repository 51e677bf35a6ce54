import { ROUTES } from '@prospect/contract';
import { OrganizationsService } from '../../src/organizations/organizations.service.js';
import { authEvents } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { addMember, createOrganization, orgsToken, personWithToken } from '../support/organization-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { postFrom, signInAs } from '../support/web-client.js';

/** Organizations and their members (issue #44): the JSON API, its roles and the last-owner rule. */
describe('/api/orgs', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp();
  });
  afterAll(async () => {
    await api?.close();
  });

  const call = (method: string, path: string, token: string, json?: unknown) => request(api, method, path, { json, token });

  /** An organization with one person of each role, and someone outside it. */
  async function team() {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner);
    const admin = await personWithToken(api);
    const member = await personWithToken(api);
    const outsider = await personWithToken(api);
    await addMember(api, slug, owner.id, admin, 'admin');
    await addMember(api, slug, owner.id, member, 'member');
    return { slug, owner, admin, member, outsider };
  }

  it('creates an organization whose creator is its owner, refuses a taken slug, bad input and a token without orgs', async () => {
    const owner = await personWithToken(api);
    const slug = `northwind-${Date.now().toString(36)}`;
    const created = await call('POST', '/api/orgs', owner.token, { name: 'Northwind', slug });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(String), slug, name: 'Northwind', role: 'owner' });

    const other = await personWithToken(api);
    const taken = await call('POST', '/api/orgs', other.token, { name: 'Another', slug });
    expect(taken.status).toBe(409);
    expect(taken.body.message).toMatch(/taken/);

    for (const body of [{ name: 'x', slug: 'Has Spaces' }, { name: 'x', slug: '-dash' }, { name: '', slug: 'fine-slug' }, { name: 'x' }, { name: 'x', slug: 'ok-slug', extra: 1 }]) {
      const refused = await call('POST', '/api/orgs', owner.token, body);
      expect({ body, status: refused.status }).toEqual({ body, status: 400 });
    }

    const profileOnly = await orgsToken(api, owner.id, ['profile']);
    const noScope = await call('GET', '/api/orgs', profileOnly);
    expect(noScope.status).toBe(403);
    expect(noScope.body.error).toBe('insufficient_scope');
    expect((await request(api, 'GET', '/api/orgs')).status).toBe(401);

    const mine = await call('GET', '/api/orgs', owner.token);
    expect(mine.body).toEqual([{ id: created.body.id, slug, name: 'Northwind', role: 'owner' }]);
    expect(await authEvents(api, { type: 'org.create', userId: owner.id })).toHaveLength(1);
  });

  it('/me lists the organizations of a token with orgs, read afresh, and nothing for a token without', async () => {
    const { slug, owner, member } = await team();
    const me = await call('GET', ROUTES.me, member.token);
    expect(me.status).toBe(200);
    expect(me.body.organizations).toEqual([{ id: expect.any(String), slug, name: 'Acme Sales', role: 'member' }]);
    const profileOnly = await call('GET', ROUTES.me, await orgsToken(api, member.id, ['profile']));
    expect(profileOnly.body.organizations).toBeUndefined();

    expect((await call('DELETE', `/api/orgs/${slug}/members/${member.id}`, owner.token)).status).toBe(204);
    expect((await call('GET', ROUTES.me, member.token)).body.organizations).toEqual([]);
  });

  // Route by route, what each role gets (the outsider: 404, as if the organization did not exist).
  const ROUTE_TABLE: Array<{ route: string; run: (t: Awaited<ReturnType<typeof team>>, token: string) => Promise<{ status: number }>; expected: Record<'outsider' | 'member' | 'admin' | 'owner', number> }> = [
    { route: 'GET /api/orgs/{slug}', run: (t, token) => call('GET', `/api/orgs/${t.slug}`, token), expected: { outsider: 404, member: 200, admin: 200, owner: 200 } },
    { route: 'GET members', run: (t, token) => call('GET', `/api/orgs/${t.slug}/members`, token), expected: { outsider: 404, member: 200, admin: 200, owner: 200 } },
    { route: 'PATCH name', run: (t, token) => call('PATCH', `/api/orgs/${t.slug}`, token, { name: 'Renamed' }), expected: { outsider: 404, member: 403, admin: 200, owner: 200 } },
    {
      route: 'PATCH a member to admin',
      run: async (t, token) => call('PATCH', `/api/orgs/${t.slug}/members/${(await newMember(t)).id}`, token, { role: 'admin' }),
      expected: { outsider: 404, member: 403, admin: 204, owner: 204 },
    },
    {
      route: 'PATCH a member to owner',
      run: async (t, token) => call('PATCH', `/api/orgs/${t.slug}/members/${(await newMember(t)).id}`, token, { role: 'owner' }),
      expected: { outsider: 404, member: 403, admin: 403, owner: 204 },
    },
    {
      route: 'DELETE a member',
      run: async (t, token) => call('DELETE', `/api/orgs/${t.slug}/members/${(await newMember(t)).id}`, token),
      expected: { outsider: 404, member: 403, admin: 204, owner: 204 },
    },
    {
      route: 'DELETE an owner (not the last)',
      run: async (t, token) => call('DELETE', `/api/orgs/${t.slug}/members/${(await newMember(t, 'owner')).id}`, token),
      expected: { outsider: 404, member: 403, admin: 403, owner: 204 },
    },
    { route: 'DELETE the organization by token', run: (t, token) => call('DELETE', `/api/orgs/${t.slug}`, token), expected: { outsider: 404, member: 403, admin: 403, owner: 403 } },
  ];
  async function newMember(t: Awaited<ReturnType<typeof team>>, role: 'member' | 'owner' = 'member') {
    const person = await personWithToken(api);
    await addMember(api, t.slug, t.owner.id, person, role);
    return person;
  }

  it.each(ROUTE_TABLE)('$route: each role gets what it may', async ({ run, expected }) => {
    for (const who of ['outsider', 'member', 'admin', 'owner'] as const) {
      const t = await team();
      const res = await run(t, t[who].token);
      expect({ who, status: res.status }).toEqual({ who, status: expected[who] });
    }
  });

  it('names the role a refusal needs', async () => {
    const t = await team();
    const refused = await call('PATCH', `/api/orgs/${t.slug}/members/${t.owner.id}`, t.admin.token, { role: 'member' });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/only an owner .* may change an owner’s role; you are an admin/i);
    const byMember = await call('PATCH', `/api/orgs/${t.slug}`, t.member.token, { name: 'Mine now' });
    expect(byMember.body.message).toMatch(/only an admin or an owner .* may rename it; you are a member/i);
  });

  it('keeps the last owner: they can neither leave, nor be removed, nor be demoted (409); with a second owner they can', async () => {
    const t = await team();
    const leave = await call('DELETE', `/api/orgs/${t.slug}/members/${t.owner.id}`, t.owner.token);
    expect(leave.status).toBe(409);
    expect(leave.body.message).toMatch(/last owner/);
    expect((await call('PATCH', `/api/orgs/${t.slug}/members/${t.owner.id}`, t.owner.token, { role: 'admin' })).status).toBe(409);

    expect((await call('PATCH', `/api/orgs/${t.slug}/members/${t.admin.id}`, t.owner.token, { role: 'owner' })).status).toBe(204);
    expect((await call('DELETE', `/api/orgs/${t.slug}/members/${t.owner.id}`, t.owner.token)).status).toBe(204);
    expect((await call('GET', `/api/orgs/${t.slug}`, t.owner.token)).status).toBe(404);
    // Anyone may leave.
    expect((await call('DELETE', `/api/orgs/${t.slug}/members/${t.member.id}`, t.member.token)).status).toBe(204);
    expect(await authEvents(api, { type: 'org.member_leave' })).toEqual(expect.arrayContaining([expect.objectContaining({ user_id: t.member.id })]));
  });

  it('two owners demoting each other at once leave one owner: the organization row is locked for every change of roles', async () => {
    for (let round = 0; round < 5; round++) {
      const t = await team();
      await call('PATCH', `/api/orgs/${t.slug}/members/${t.admin.id}`, t.owner.token, { role: 'owner' });
      const [a, b] = await Promise.all([
        call('PATCH', `/api/orgs/${t.slug}/members/${t.admin.id}`, t.owner.token, { role: 'member' }),
        call('PATCH', `/api/orgs/${t.slug}/members/${t.owner.id}`, t.admin.token, { role: 'member' }),
      ]);
      // The one that ran second finds itself demoted (403) or the other the last owner (409).
      expect([a.status, b.status].filter((s) => s === 204)).toHaveLength(1);
      expect([a.status, b.status].filter((s) => s === 403 || s === 409)).toHaveLength(1);
      const members = (await call('GET', `/api/orgs/${t.slug}/members`, t.member.token)).body as Array<{ role: string }>;
      expect(members.filter((m) => m.role === 'owner')).toHaveLength(1);
    }
  });

  it('many owners leaving at once leave exactly one', async () => {
    const t = await team();
    const owners = [t.owner, ...(await Promise.all([1, 2, 3, 4, 5].map(() => newMember(t, 'owner'))))];
    const answers = await Promise.all(owners.map((o) => call('DELETE', `/api/orgs/${t.slug}/members/${o.id}`, o.token)));
    expect(answers.map((a) => a.status).sort()).toEqual([204, 204, 204, 204, 204, 409]);
  });

  it('a removed member loses the organization at the next request, whatever token they hold', async () => {
    const t = await team();
    const second = await orgsToken(api, t.member.id);
    expect((await call('GET', `/api/orgs/${t.slug}/members`, second)).status).toBe(200);
    expect((await call('DELETE', `/api/orgs/${t.slug}/members/${t.member.id}`, t.admin.token)).status).toBe(204);
    for (const token of [t.member.token, second]) {
      expect((await call('GET', `/api/orgs/${t.slug}`, token)).status).toBe(404);
      expect((await call('GET', '/api/orgs', token)).body).toEqual([]);
    }
    const log = await api.app.get(OrganizationsService).log((await api.app.get(OrganizationsService).membership(t.slug, t.owner.id, null))!.id, 10, 0);
    expect(log[0]).toMatchObject({ type: 'org.member_remove', actorEmail: t.admin.email, detail: { memberId: t.member.id, role: 'member' } });
  });

  it('an owner deletes it from a re-confirmed browser, with everything it owns; a token is sent to the page', async () => {
    const t = await team();
    const byToken = await call('DELETE', `/api/orgs/${t.slug}`, t.owner.token);
    expect(byToken.status).toBe(403);
    expect(byToken.body.message).toContain(`/orgs/${t.slug}`);

    const web = await signInAs(api, t.owner.email, 'correct horse battery');
    const csrf = /name="_csrf" value="([^"]+)"/.exec((await web.send('GET', ROUTES.tokensPage)).text)![1]!;
    const listed = await web.agent.get('/api/orgs').set('x-csrf-token', csrf);
    expect(listed.status).toBe(200);
    const deleted = await web.agent.delete(`/api/orgs/${t.slug}`).set('x-csrf-token', csrf);
    expect(deleted.status).toBe(204);
    expect((await call('GET', `/api/orgs/${t.slug}`, t.member.token)).status).toBe(404);
    expect((await call('GET', ROUTES.me, t.admin.token)).body.organizations).toEqual([]);
    expect(await authEvents(api, { type: 'org.delete', userId: t.owner.id })).toHaveLength(1);
  });

  it('an account that is the only owner of an organization with other members is not deleted; one of its own goes with it', async () => {
    const t = await team();
    const web = await signInAs(api, t.owner.email, 'correct horse battery');
    const refused = await postFrom(web, '/settings/account', '/settings/account/delete', { password: 'correct horse battery' });
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('only owner of “Acme Sales”');
    expect((await call('GET', `/api/orgs/${t.slug}`, t.owner.token)).status).toBe(200);

    const loner = await personWithToken(api);
    const own = await createOrganization(api, loner, 'Solo');
    const lonerWeb = await signInAs(api, loner.email, 'correct horse battery');
    expect((await postFrom(lonerWeb, '/settings/account', '/settings/account/delete', { password: 'correct horse battery' })).status).toBe(303);
    // Its slug is free again: the organization went with its only member.
    const again = await personWithToken(api);
    expect((await call('POST', '/api/orgs', again.token, { name: 'Solo again', slug: own })).status).toBe(201);
  });

  it('a member who deletes their account leaves each organization’s log one org.member_remove, reason account deleted', async () => {
    const t = await team();
    const second = await personWithToken(api);
    const otherSlug = await createOrganization(api, second, 'Second');
    await addMember(api, otherSlug, second.id, t.member, 'admin');
    const web = await signInAs(api, t.member.email, 'correct horse battery');
    expect((await postFrom(web, '/settings/account', '/settings/account/delete', { password: 'correct horse battery' })).status).toBe(303);

    const service = api.app.get(OrganizationsService);
    for (const [slug, ownerId, role] of [[t.slug, t.owner.id, 'member'], [otherSlug, second.id, 'admin']] as const) {
      const org = (await service.membership(slug, ownerId, null))!;
      const removals = (await service.log(org.id, 50, 0)).filter((e) => e.type === 'org.member_remove');
      expect(removals).toEqual([expect.objectContaining({ detail: { memberId: t.member.id, role, reason: 'account deleted' } })]);
      expect((await service.listMembers(org.id)).map((m) => m.user.id)).not.toContain(t.member.id);
    }
    // The organization's page says it in words.
    const ownerWeb = await signInAs(api, t.owner.email, 'correct horse battery');
    expect((await ownerWeb.send('GET', `/orgs/${t.slug}`)).text).toContain('their account was deleted');
  });

  it('an owner deleting their account while the other owner leaves at the same instant never leaves the organization without an owner', async () => {
    for (let round = 0; round < 3; round++) {
      const t = await team();
      await call('PATCH', `/api/orgs/${t.slug}/members/${t.admin.id}`, t.owner.token, { role: 'owner' });
      const web = await signInAs(api, t.owner.email, 'correct horse battery');
      const page = (await web.send('GET', '/settings/account')).text;
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
      const [deletion, leaving] = await Promise.all([
        web.send('POST', '/settings/account/delete', { _csrf: csrf, password: 'correct horse battery' }),
        call('DELETE', `/api/orgs/${t.slug}/members/${t.admin.id}`, t.admin.token),
      ]);
      expect([deletion.status, leaving.status].filter((s) => s === 409)).toHaveLength(1);
      const members = (await call('GET', `/api/orgs/${t.slug}/members`, t.member.token)).body as Array<{ role: string }>;
      expect(members.filter((m) => m.role === 'owner')).toHaveLength(1);
    }
  });
});
