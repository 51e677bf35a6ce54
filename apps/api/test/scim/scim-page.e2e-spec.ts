import { createUser } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { addMember, createOrganization, personWithToken } from '../support/organization-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { markDomainVerified, organizationId } from '../support/verified-domain-fixtures.js';
import { postFrom, signInAs } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';

/** /orgs/{slug}/scim (issue #47): the endpoint, a token shown once and revoked, the settings, the provisioning log. */
describe('the organization’s SCIM page', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp();
  });
  afterAll(() => api?.close());

  it('shows the endpoint, makes a token shown once, saves the mapping, logs the directory’s requests, revokes', async () => {
    const domain = `scim-page-${Date.now().toString(36)}.example`;
    const owner = await personWithToken(api, { email: `owner@${domain}` });
    const slug = await createOrganization(api, owner, 'Initech');
    await markDomainVerified(api, await organizationId(api, slug, owner.id), domain);
    const web = await signInAs(api, owner.email, PASSWORD);
    const page = `/orgs/${slug}/scim`;

    const empty = await web.send('GET', page);
    expect(empty.status).toBe(200);
    expect(empty.text).toContain(`/scim/v2/${slug}`);
    expect(empty.text).toContain('No token yet.');
    expect(empty.text).toContain('aria-current="page">SCIM</a>');

    const created = await postFrom(web, page, `${page}/tokens`, { label: 'Okta' });
    expect(created.status).toBe(201);
    expect(created.headers['cache-control']).toContain('no-store');
    const token = /value="(prscim_[A-Za-z0-9_-]{43})"/.exec(created.text)![1]!;
    expect((await web.send('GET', page)).text).not.toContain(token);

    const saved = await postFrom(web, page, `${page}/settings`, { groupRoles: 'Prospect Admins = admin\nEngineering = member', deactivateDisablesAccount: 'on' });
    expect(saved.status).toBe(303);
    const settings = (await request(api, 'GET', `/api/orgs/${slug}/scim`, { token: owner.token })).body;
    expect(settings).toMatchObject({ deactivateDisablesAccount: true, groupRoles: [{ group: 'Engineering', role: 'member' }, { group: 'Prospect Admins', role: 'admin' }] });
    const bad = await postFrom(web, page, `${page}/settings`, { groupRoles: 'Prospect Admins = owner' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Group name = admin');

    const provisioned = await request(api, 'POST', `/scim/v2/${slug}/Users`, {
      token,
      body: JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: `ada@${domain}` }),
      headers: { 'content-type': 'application/scim+json' },
    });
    expect(provisioned.status).toBe(201);
    const refused = await request(api, 'POST', `/scim/v2/${slug}/Users`, {
      token,
      body: JSON.stringify({ userName: 'eve@elsewhere.example' }),
      headers: { 'content-type': 'application/scim+json' },
    });
    expect(refused.status).toBe(400);
    let logged = '';
    const { waitFor } = await import('../support/eventually.js');
    await waitFor('the provisioning log', async () => (logged = (await web.send('GET', page)).text).includes('eve@elsewhere.example'));
    expect(logged).toContain('POST /Users');
    expect(logged).toContain(`ada@${domain}`);
    expect(logged).toContain('Last used');

    const tokenId = /scim\/tokens\/([0-9a-f-]{36})\/revoke/.exec(logged)![1]!;
    expect((await postFrom(web, page, `${page}/tokens/${tokenId}/revoke`)).status).toBe(303);
    expect((await web.send('GET', `${page}?done=revoked`)).text).toContain('No token yet.');
    expect((await request(api, 'GET', `/scim/v2/${slug}/Users`, { token })).status).toBe(401);
  });

  it('a member who is not an admin is refused, a stranger finds nothing', async () => {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner, 'Initrode');
    const member = await createUser(api);
    await addMember(api, slug, owner.id, member, 'member');
    expect((await (await signInAs(api, member.email, PASSWORD)).send('GET', `/orgs/${slug}/scim`)).status).toBe(403);
    const stranger = await createUser(api);
    expect((await (await signInAs(api, stranger.email, PASSWORD)).send('GET', `/orgs/${slug}/scim`)).status).toBe(404);
  });
});
