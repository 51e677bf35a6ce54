import { OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { decodeJwt } from 'jose';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { approveIn, pkce, tokenRequest } from '../oauth/code-flow-support.js';
import { authorizedPoll, createUser } from '../support/fixtures.js';
import { get, post, request } from '../support/http.js';
import { addMember, createOrganization, personWithToken } from '../support/organization-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { signInAs } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const REDIRECT = 'https://team-tool.example.com/callback';

/**
 * A member removed from an organization, as an attacker who kept every credential would try it
 * (issue #44): a device login's token and its refresh, a code grant's token, ID token and userinfo,
 * and a CLI token made with a token. None shows or acts for the organization after the removal;
 * the membership is read at each request, never carried in a token.
 */
describe('organizations across every door', () => {
  let api: TestApp;
  beforeAll(async () => {
    api = await startTestApp();
    const admin = await createUser(api, { role: 'admin' });
    const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
    const client = await request(api, 'POST', '/api/admin/clients', {
      json: { id: 'team-tool', name: 'Team tool', allowedScopes: ['openid', 'profile', 'orgs'], redirectUris: [REDIRECT] },
      token: adminToken,
    });
    expect(client.status).toBe(201);
  });
  afterAll(() => api?.close());

  const refresh = (refreshToken: string) => tokenRequest(api, { grant_type: 'refresh_token', client_id: 'team-tool', refresh_token: refreshToken });

  it('a removed member’s device login, refresh, code grant, ID token, userinfo and minted token no longer show or act for the organization', async () => {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner, 'Globex');
    const member = await createUser(api);
    await addMember(api, slug, owner.id, member, 'admin');
    const listed = [{ id: expect.any(String), slug, name: 'Globex', role: 'admin' }];

    // The CLI's device login asks for `orgs` by default.
    const device = (await authorizedPoll(api, member)).body;
    expect((await get(api, ROUTES.me, device.accessToken)).body.organizations).toEqual(listed);
    const minted = (await post(api, ROUTES.issueToken, { label: 'CI' }, device.accessToken)).body.accessToken as string;
    expect((await get(api, `/api/orgs/${slug}/members`, minted)).status).toBe(200);

    // A code grant with `openid orgs`: the ID token and userinfo carry `orgs`.
    const web = await signInAs(api, member.email, PASSWORD);
    const { verifier, challenge } = pkce();
    const back = await approveIn(web, {
      response_type: 'code', client_id: 'team-tool', redirect_uri: REDIRECT, scope: 'openid profile orgs', code_challenge: challenge, code_challenge_method: 'S256', state: 's',
    });
    const code = (await tokenRequest(api, { grant_type: 'authorization_code', client_id: 'team-tool', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier })).body;
    expect(decodeJwt(code.id_token).orgs).toEqual([{ id: expect.any(String), slug, name: 'Globex', role: 'admin' }]);
    expect((await get(api, OAUTH_ROUTES.userinfo, code.access_token)).body.orgs).toEqual(listed);

    expect((await request(api, 'DELETE', `/api/orgs/${slug}/members/${member.id}`, { token: owner.token })).status).toBe(204);

    for (const [door, token] of [['device login', device.accessToken], ['minted token', minted], ['code grant', code.access_token]] as const) {
      expect({ door, org: (await get(api, `/api/orgs/${slug}`, token)).status }).toEqual({ door, org: 404 });
      expect({ door, mine: (await get(api, '/api/orgs', token)).body }).toEqual({ door, mine: [] });
    }
    expect((await get(api, ROUTES.me, device.accessToken)).body.organizations).toEqual([]);
    expect((await get(api, OAUTH_ROUTES.userinfo, code.access_token)).body.orgs).toEqual([]);
    // A refresh after the removal: the new tokens are the person's, without the organization.
    const refreshedDevice = (await post(api, ROUTES.refresh, { refreshToken: device.refreshToken })).body;
    expect((await get(api, ROUTES.me, refreshedDevice.accessToken)).body.organizations).toEqual([]);
    const refreshedCode = (await refresh(code.refresh_token)).body;
    expect((await get(api, `/api/orgs/${slug}/members`, refreshedCode.access_token)).status).toBe(404);
  });

  it('a client not allowed orgs is never granted it', async () => {
    const admin = await createUser(api, { role: 'admin' });
    const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
    await request(api, 'POST', '/api/admin/clients', { json: { id: 'profile-tool', name: 'Profile tool', allowedScopes: ['openid', 'profile'], redirectUris: [REDIRECT] }, token: adminToken });
    const person = await createUser(api);
    const web = await signInAs(api, person.email, PASSWORD);
    const params = { response_type: 'code', client_id: 'profile-tool', redirect_uri: REDIRECT, scope: 'openid orgs', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' };
    const answer = await web.send('GET', `${OAUTH_ROUTES.authorize}?${new URLSearchParams(params)}`, undefined, { 'sec-fetch-site': 'none' });
    expect(answer.status).toBe(303);
    expect(new URL(answer.location!).searchParams.get('error')).toBe('invalid_scope');
  });
});
