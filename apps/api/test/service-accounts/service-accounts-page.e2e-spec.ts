import { startTestApp, type TestApp } from '../support/test-app.js';
import { postFrom, signInAs } from '../support/web-client.js';
import { request } from '../support/http.js';
import { createServiceAccount, organizationWithOwner, secretPost } from './support.js';

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

  it('trusts an issuer for an account (token exchange) and stops trusting it', async () => {
    const { owner, slug } = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token, ['profile'], 'deploy job');
    const web = await signInAs(api, owner.email, 'correct horse battery');
    const page = `/orgs/${slug}/service-accounts`;
    expect((await web.send('GET', page)).text).toContain('No trusted issuer');

    const noCondition = await postFrom(web, page, `${page}/${account.id}/federations`, { issuer: 'https://token.actions.githubusercontent.com', audience: '', conditions: '' });
    expect(noCondition.status).toBe(400);
    expect(noCondition.text).toContain('at least one condition');
    const notALine = await postFrom(web, page, `${page}/${account.id}/federations`, { issuer: 'https://token.actions.githubusercontent.com', audience: '', conditions: 'acme/api' });
    expect(notALine.status).toBe(400);
    expect(notALine.text).toContain('claim=pattern');

    const added = await postFrom(web, page, `${page}/${account.id}/federations`, {
      issuer: 'https://token.actions.githubusercontent.com',
      audience: '',
      conditions: 'repository=acme/api\r\nsub=repo:acme/api:ref=refs/heads/*\r\n',
    });
    expect(added.status).toBe(303);
    const listed = (await web.send('GET', added.location!)).text;
    expect(listed).toContain('https://token.actions.githubusercontent.com');
    expect(listed).toContain(`<code>${api.baseUrl}</code>`);
    // Handlebars writes a `=` of the pattern as &#x3D;.
    expect(listed).toContain('<code>sub=repo:acme/api:ref&#x3D;refs/heads/*</code>');
    const [federation] = (await request(api, 'GET', `/api/orgs/${slug}/service-accounts/${account.id}/federations`, { token: owner.token })).body;
    expect(federation).toMatchObject({ audience: api.baseUrl, conditions: { repository: 'acme/api', sub: 'repo:acme/api:ref=refs/heads/*' } });

    expect((await postFrom(web, page, `${page}/${account.id}/federations/${federation.id}/delete`)).status).toBe(303);
    expect((await request(api, 'GET', `/api/orgs/${slug}/service-accounts/${account.id}/federations`, { token: owner.token })).body).toEqual([]);
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
