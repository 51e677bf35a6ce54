import { startTestApp, type TestApp } from '../support/test-app.js';
import { postFrom, signInAs } from '../support/web-client.js';
import { organizationWithOwner, secretPost } from './support.js';

/** /orgs/{slug}/service-accounts (issue #45): an admin creates one, a secret shown once, disables it. */
describe('the organization’s service accounts page', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp();
  });
  afterAll(() => api?.close());

  it('creates an account, shows its new secret once, and disables it', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const web = await signInAs(api, owner.email, 'correct horse battery');
    const page = `/orgs/${slug}/service-accounts`;
    expect((await web.send('GET', page)).text).toContain('No service accounts yet.');

    const created = await postFrom(web, page, page, { name: 'warehouse job', scopes: ['profile'] });
    expect(created.status).toBe(303);
    const listed = (await web.send('GET', created.location!)).text;
    expect(listed).toContain('warehouse job');
    const clientId = /<code>(psa_[^<]+)<\/code>/.exec(listed)![1]!;
    const accountId = /id="sa-([0-9a-f-]{36})"/.exec(listed)![1]!;

    const withSecret = await postFrom(web, page, `${page}/${accountId}/secrets`, { expiresInDays: '' });
    expect(withSecret.status).toBe(201);
    expect(withSecret.headers['cache-control']).toContain('no-store');
    const secret = /value="(prsa_[A-Za-z0-9_-]{43})"/.exec(withSecret.text)![1]!;
    // Shown once: the page does not show it again.
    expect((await web.send('GET', page)).text).not.toContain(secret);
    const token = (await secretPost(api, clientId, secret)).body.access_token as string;
    expect(token).toMatch(/^prs_/);

    expect((await postFrom(web, page, `${page}/${accountId}/disable`)).status).toBe(303);
    expect((await web.send('GET', page)).text).toContain('disabled');
    expect((await secretPost(api, clientId, secret)).body).toMatchObject({ error: 'invalid_client' });
  });

  it('a member who is not an admin is refused', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const { createUser } = await import('../support/fixtures.js');
    const { addMember } = await import('../support/organization-fixtures.js');
    const member = await createUser(api);
    await addMember(api, slug, owner.id, member, 'member');
    const web = await signInAs(api, member.email, 'correct horse battery');
    expect((await web.send('GET', `/orgs/${slug}/service-accounts`)).status).toBe(403);
  });
});
