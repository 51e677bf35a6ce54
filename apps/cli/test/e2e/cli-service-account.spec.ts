/**
 * The built `prospect` binary with a service account's token (issue #45), obtained from the real
 * API by the client credentials grant, as a CI job would pass it in PROSPECT_TOKEN.
 */
import { OrganizationsService } from '../../../api/src/organizations/organizations.service.js';
import { ServiceAccountsService } from '../../../api/src/service-accounts/service-accounts.service.js';
import { api, box, person, useRealApi } from '../support/e2e-suite.js';

useRealApi('service-account');

async function serviceAccountToken() {
  const slug = `robots-${Date.now().toString(36)}`;
  const organizations = api.app.get(OrganizationsService);
  await organizations.create(person.id, { name: 'Robots Inc', slug }, null);
  const actor = { userId: person.id, ip: null, organization: (await organizations.membership(slug, person.id, null))! };
  const accounts = api.app.get(ServiceAccountsService);
  const account = await accounts.create(actor, { name: 'nightly sync', scopes: ['profile', 'orgs'] });
  const { clientSecret } = await accounts.createSecret(actor, account.id);
  const res = await fetch(`${api.baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${account.clientId}:${clientSecret}`).toString('base64')}` },
    body: 'grant_type=client_credentials',
  });
  const { access_token } = (await res.json()) as { access_token: string };
  return { slug, account, token: access_token };
}

describe('a service account’s token', () => {
  it('auth:whoami with PROSPECT_TOKEN says it is a service account of its organization', async () => {
    const { slug, account, token } = await serviceAccountToken();
    const env = { PROSPECT_TOKEN: token, PROSPECT_API_BASE_URL: api.baseUrl };
    const run = await box.run(['auth:whoami'], { env });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^Service account nightly sync of Robots Inc \\(${slug}\\), on ${api.baseUrl} \\(verified\\), with the token in PROSPECT_TOKEN\nToken expires .*\n$`));
    const json = await box.run(['auth:whoami', '--verify', '--json'], { env });
    expect(JSON.parse(json.stdout)).toMatchObject({ user: { id: account.id, email: null, name: 'nightly sync' }, kind: 'service_account', organization: { slug, name: 'Robots Inc' } });
  });

  it('auth:status --verify with PROSPECT_TOKEN names it as a service account', async () => {
    const { slug, token } = await serviceAccountToken();
    const run = await box.run(['auth:status', '--verify'], { env: { PROSPECT_TOKEN: token, PROSPECT_API_BASE_URL: api.baseUrl } });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`User:         Service account nightly sync of Robots Inc (${slug})`);
  });

  it('auth:login --token refuses to save it as a person’s session', async () => {
    const { token } = await serviceAccountToken();
    const run = await box.run(['auth:login', '--api-url', api.baseUrl, '--token', token]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('is a token of the service account nightly sync of Robots Inc');
    expect(box.hasSession()).toBe(false);
  });
});
