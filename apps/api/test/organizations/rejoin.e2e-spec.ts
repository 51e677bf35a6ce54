import { OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { latestLink } from '../support/account-flows.js';
import { FakeClock } from '../support/fake-clock.js';
import { authorizedPoll, createUser } from '../support/fixtures.js';
import { get, post, request } from '../support/http.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { addMember, createOrganization, personWithToken } from '../support/organization-fixtures.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import type { TestApp } from '../support/test-app.js';
import { withClient } from '../support/test-database.js';
import { approveIn, pkce, tokenRequest } from '../oauth/code-flow-support.js';
import { csrfFrom, postFrom, signIn, signInAs } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const REDIRECT = 'https://rejoin-tool.example.com/callback';

/**
 * "A credential ends with the state it was issued for", for organizations (issue #47): a person
 * removed from an organization and added back later gets nothing back through what was issued
 * before the removal (a CLI token, its refresh, an app's grant); a login after re-joining acts for
 * it. A first-time joiner's token, issued before they ever joined, acts for it as before. The clock
 * is fake and moved on between steps, so "at or before the departure" is exact.
 */
describe('re-joining an organization', () => {
  let api: TestApp;
  let smtp: SmtpSink;
  const clock = new FakeClock(Date.now());
  beforeAll(async () => {
    ({ api, smtp } = await startAppWithMail({ clock }));
    const admin = await createUser(api, { role: 'admin' });
    const adminToken = (await api.app.get(TokensService).issue({ userId: admin.id, origin: 'direct', scope: 'profile tokens admin' })).accessToken;
    const client = await request(api, 'POST', '/api/admin/clients', {
      json: { id: 'rejoin-tool', name: 'Rejoin tool', allowedScopes: ['openid', 'profile', 'orgs'], redirectUris: [REDIRECT] },
      token: adminToken,
    });
    expect(client.status).toBe(201);
  });
  afterAll(() => api?.close());

  /** Invites `email` through the API and accepts the mailed link in a browser signed in as them (the real flow). */
  async function reinvite(slug: string, by: { token: string }, email: string) {
    const invited = await request(api, 'POST', `/api/orgs/${slug}/invitations`, { json: { email, role: 'member' }, token: by.token });
    expect(invited.status).toBe(201);
    const token = (await latestLink(api, smtp, email, '/invitations')).searchParams.get('token')!;
    const web = await signInAs(api, email, PASSWORD);
    expect((await postFrom(web, `/invitations?token=${encodeURIComponent(token)}`, '/invitations', { token })).status).toBe(303);
  }

  /** What `token` gets of the organization: its route, /me's list, /api/orgs. */
  async function seen(slug: string, token: string) {
    return {
      route: (await get(api, `/api/orgs/${slug}/members`, token)).status,
      me: ((await get(api, ROUTES.me, token)).body.organizations as Array<{ slug: string }>).map((o) => o.slug),
      mine: ((await get(api, '/api/orgs', token)).body as Array<{ slug: string }>).map((o) => o.slug),
    };
  }
  const acting = (slug: string) => ({ route: 200, me: [slug], mine: [slug] });
  const notActing = { route: 404, me: [], mine: [] };

  // sql-on-purpose: the departure row itself (one per person and organization, the latest kept) is what is checked
  const departures = async (userId: string) =>
    withClient(api.database.url, async (db) => (await db.query(`SELECT left_at FROM organization_departures WHERE user_id = $1`, [userId])).rows as Array<{ left_at: Date }>);

  it('removed by an admin, then re-invited: the old CLI token, its refresh and an app’s grant stay out; a new login acts', async () => {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner, 'Initech');
    const person = await createUser(api);
    await addMember(api, slug, owner.id, person, 'member');

    const cli = (await authorizedPoll(api, person)).body;
    const web = await signInAs(api, person.email, PASSWORD);
    const { verifier, challenge } = pkce();
    const back = await approveIn(web, {
      response_type: 'code', client_id: 'rejoin-tool', redirect_uri: REDIRECT, scope: 'openid profile orgs', code_challenge: challenge, code_challenge_method: 'S256', state: 's',
    });
    const app = (await tokenRequest(api, { grant_type: 'authorization_code', client_id: 'rejoin-tool', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier })).body;
    expect(await seen(slug, cli.accessToken)).toEqual(acting(slug));
    expect((await get(api, OAUTH_ROUTES.userinfo, app.access_token)).body.orgs).toEqual([expect.objectContaining({ slug })]);

    clock.advanceSeconds(60);
    expect((await request(api, 'DELETE', `/api/orgs/${slug}/members/${person.id}`, { token: owner.token })).status).toBe(204);
    expect(await departures(person.id)).toEqual([{ left_at: clock.now() }]);
    clock.advanceSeconds(60);
    await reinvite(slug, owner, person.email);

    // A member again (the owner sees them), but nothing issued before the removal acts for it.
    expect(((await get(api, `/api/orgs/${slug}/members`, owner.token)).body as Array<{ user: { id: string } }>).some((m) => m.user.id === person.id)).toBe(true);
    expect(await seen(slug, cli.accessToken)).toEqual(notActing);
    const refreshed = (await post(api, ROUTES.refresh, { refreshToken: cli.refreshToken })).body;
    expect(await seen(slug, refreshed.accessToken)).toEqual(notActing);
    expect((await get(api, OAUTH_ROUTES.userinfo, app.access_token)).body.orgs).toEqual([]);
    const appRefreshed = (await tokenRequest(api, { grant_type: 'refresh_token', client_id: 'rejoin-tool', refresh_token: app.refresh_token })).body;
    expect((await get(api, `/api/orgs/${slug}`, appRefreshed.access_token)).status).toBe(404);
    // A token minted with the old token is issued under its grant: out too.
    const minted = (await post(api, ROUTES.issueToken, { label: 'CI' }, refreshed.accessToken)).body.accessToken as string;
    expect((await get(api, `/api/orgs/${slug}`, minted)).status).toBe(404);
    // And one minted with that one, after the re-join: still the old grant's, however long the chain.
    const mintedTwice = (await post(api, ROUTES.issueToken, { label: 'CI 2' }, minted)).body.accessToken as string;
    expect((await get(api, `/api/orgs/${slug}`, mintedTwice)).status).toBe(404);

    // The browser signed in before the removal is a credential of that time too: its organization's
    // page says to sign in again, its list and the API through it leave the organization out.
    const page = await web.send('GET', `/orgs/${slug}`);
    expect(page.status).toBe(403);
    expect(page.text).toContain('Sign in again to act for “Initech”');
    expect((await web.send('GET', '/orgs')).text).not.toContain(`/orgs/${slug}`);
    const csrf = csrfFrom(page.text);
    expect((await web.agent.get(`/api/orgs/${slug}/members`).set('x-csrf-token', csrf)).status).toBe(404);
    expect((await web.agent.get('/api/orgs').set('x-csrf-token', csrf)).body).toEqual([]);
    // Its button signs out and back to the sign-in, which leads to the organization again.
    const out = await web.send('POST', '/logout', { _csrf: csrf, next: `/orgs/${slug}` });
    expect(out.location).toBe(`/login?next=${encodeURIComponent(`/orgs/${slug}`)}`);
    clock.advanceSeconds(1);
    const again = await signIn(web, person.email, PASSWORD, { next: `/orgs/${slug}` });
    expect(again.location).toBe(`/orgs/${slug}`);
    expect((await web.send('GET', `/orgs/${slug}`)).status).toBe(200);

    // A login after re-joining acts for it; the person's other organizations were never affected.
    const fresh = (await authorizedPoll(api, person)).body;
    expect(await seen(slug, fresh.accessToken)).toEqual(acting(slug));
    const freshRefreshed = (await post(api, ROUTES.refresh, { refreshToken: fresh.refreshToken })).body;
    expect((await get(api, `/api/orgs/${slug}/members`, freshRefreshed.accessToken)).status).toBe(200);
  });

  it('leaving, then re-joining: the same; a token issued at the very instant of the departure stays out too', async () => {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner, 'Hooli');
    const person = await createUser(api);
    await addMember(api, slug, owner.id, person, 'member');
    const other = await createOrganization(api, { token: (await authorizedPoll(api, person)).body.accessToken }, 'Side project');

    clock.advanceSeconds(60);
    const cli = (await authorizedPoll(api, person)).body;
    expect((await request(api, 'DELETE', `/api/orgs/${slug}/members/${person.id}`, { token: cli.accessToken })).status).toBe(204);
    await reinvite(slug, owner, person.email);
    // Issued at the same instant as the departure (the clock did not move): "at or before".
    expect(await seen(slug, cli.accessToken)).toEqual({ route: 404, me: [other], mine: [other] });
    expect((await get(api, `/api/orgs/${other}`, cli.accessToken)).status).toBe(200);

    clock.advanceSeconds(1);
    const fresh = (await authorizedPoll(api, person)).body;
    expect((await get(api, `/api/orgs/${slug}`, fresh.accessToken)).status).toBe(200);
    // Left twice: the later departure is the one kept.
    clock.advanceSeconds(60);
    expect((await request(api, 'DELETE', `/api/orgs/${slug}/members/${person.id}`, { token: fresh.accessToken })).status).toBe(204);
    expect(await departures(person.id)).toEqual([{ left_at: clock.now() }]);
    await reinvite(slug, owner, person.email);
    expect((await get(api, `/api/orgs/${slug}`, fresh.accessToken)).status).toBe(404);
  });

  it('a first-time joiner’s token, issued before they ever joined, acts for the organization they join', async () => {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner, 'Vandelay');
    const person = await createUser(api);
    const cli = (await authorizedPoll(api, person)).body;
    expect(await seen(slug, cli.accessToken)).toEqual(notActing);

    clock.advanceSeconds(60);
    await reinvite(slug, owner, person.email);
    expect(await departures(person.id)).toEqual([]);
    expect(await seen(slug, cli.accessToken)).toEqual(acting(slug));
    const refreshed = (await post(api, ROUTES.refresh, { refreshToken: cli.refreshToken })).body;
    expect(await seen(slug, refreshed.accessToken)).toEqual(acting(slug));
  });

  it('requests at the same moment as the removal: each acts fully before it or not at all, and nothing acts after the re-join', async () => {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner, 'Umbrella');
    const person = await createUser(api);
    await addMember(api, slug, owner.id, person, 'member');
    const cli = (await authorizedPoll(api, person)).body;
    clock.advanceSeconds(60);

    const [removal, ...answers] = await Promise.all([
      request(api, 'DELETE', `/api/orgs/${slug}/members/${person.id}`, { token: owner.token }),
      ...Array.from({ length: 12 }, () => get(api, `/api/orgs/${slug}/members`, cli.accessToken)),
    ]);
    expect(removal.status).toBe(204);
    for (const answer of answers) expect([200, 404]).toContain(answer.status);
    expect(await departures(person.id)).toHaveLength(1);

    clock.advanceSeconds(60);
    // Re-added while the old token keeps asking: none of those answers act for the organization.
    const [, ...after] = await Promise.all([
      reinvite(slug, owner, person.email),
      ...Array.from({ length: 12 }, () => get(api, `/api/orgs/${slug}/members`, cli.accessToken)),
    ]);
    for (const answer of after) expect(answer.status).toBe(404);
    expect(await seen(slug, cli.accessToken)).toEqual(notActing);
  });
});
