import { CLI_CLIENT_ID, OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { FakeClock } from '../support/fake-clock.js';
import { createUser } from '../support/fixtures.js';
import { get, request } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { signInAs, type WebClient } from '../support/web-client.js';
import { authorizationParams, pkce, tokenRequest } from './code-flow-support.js';

/**
 * `prospect auth:login --web` on the server's side (issue #48): the CLI's built-in client takes the
 * authorization code flow with PKCE to a loopback redirect on any port (RFC 8252 §7.3), and, being
 * first party, asks no consent; its tokens are a CLI session's (refreshed on the CLI's route).
 */
describe("the CLI's own client in the authorization code flow", () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  beforeAll(async () => (api = await startTestApp({ clock })));
  afterAll(() => api.close());

  const redirect = (port: number) => `http://127.0.0.1:${port}/callback`;
  const authorize = (web: WebClient, params: Record<string, string>) =>
    web.send('GET', `${OAUTH_ROUTES.authorize}?${new URLSearchParams(params)}`, undefined, { 'sec-fetch-site': 'none' });

  it('a signed-in person is sent straight back to the loopback port with a code: no consent page', async () => {
    const person = await createUser(api);
    const web = await signInAs(api, person.email, 'correct horse battery');
    const { verifier, challenge } = pkce();
    const params = authorizationParams(CLI_CLIENT_ID, redirect(53_682), challenge, { scope: 'profile tokens', state: 's-1' });
    const answer = await authorize(web, params);
    expect(answer.status).toBe(303);
    const back = new URL(answer.location!);
    expect(back.origin + back.pathname).toBe(redirect(53_682));
    expect(back.searchParams.get('state')).toBe('s-1');

    const tokens = await tokenRequest(api, { grant_type: 'authorization_code', client_id: CLI_CLIENT_ID, code: back.searchParams.get('code')!, redirect_uri: redirect(53_682), code_verifier: verifier });
    expect(tokens.status).toBe(200);
    expect(tokens.body).toMatchObject({ token_type: 'Bearer', scope: 'profile tokens', refresh_token: expect.stringMatching(/^prsr_/) });
    const me = await get(api, ROUTES.me, tokens.body.access_token);
    expect(me.body.user).toMatchObject({ id: person.id, email: person.email });
    // A CLI session: renewed on the CLI's own refresh route, like a device login's.
    const renewed = await request(api, 'POST', ROUTES.refresh, { json: { refreshToken: tokens.body.refresh_token } });
    expect(renewed.status).toBe(200);
    expect(renewed.body.accessToken).toMatch(/^prs_/);
  });

  it('a session past sudo mode confirms who it is first, as approving a device login does; then the code', async () => {
    const person = await createUser(api);
    const web = await signInAs(api, person.email, 'correct horse battery');
    clock.advanceSeconds(2 * 3600 + 1); // SUDO_SECONDS
    const params = authorizationParams(CLI_CLIENT_ID, redirect(40_001), pkce().challenge, { scope: 'profile tokens', state: 's-2' });
    const asked = await authorize(web, params);
    expect(asked.text).toContain('Confirm it’s you'); // the sudo page, in place of a code
    expect(asked.location).toBeUndefined();
    const next = /name="next" value="([^"]+)"/.exec(asked.text)![1]!.replace(/&amp;/g, '&').replace(/&#x3D;/g, '=');
    const confirmed = await web.send('POST', '/sudo', { _csrf: web.csrfFrom(asked.text), next, password: 'correct horse battery' });
    expect(confirmed.status).toBe(303);
    const back = await web.send('GET', confirmed.location!, undefined, { 'sec-fetch-site': 'none' });
    expect(back.status).toBe(303);
    expect(new URL(back.location!).searchParams.has('code')).toBe(true);
    // Silently (prompt=none), past sudo mode again: an error to the client, never a code.
    clock.advanceSeconds(2 * 3600 + 1);
    const silent = new URL((await authorize(web, { ...params, prompt: 'none' })).location!);
    expect(silent.searchParams.get('error')).toBe('interaction_required');
  });

  it('any loopback port, never another host', async () => {
    const person = await createUser(api);
    const web = await signInAs(api, person.email, 'correct horse battery');
    const { challenge } = pkce();
    expect((await authorize(web, authorizationParams(CLI_CLIENT_ID, redirect(1_025), challenge, { scope: 'profile' }))).status).toBe(303);
    const elsewhere = await authorize(web, authorizationParams(CLI_CLIENT_ID, 'http://attacker.example/callback', challenge, { scope: 'profile' }));
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.location).toBeUndefined();
  });

  it('admin is never granted through the browser, to the CLI either', async () => {
    const person = await createUser(api);
    const web = await signInAs(api, person.email, 'correct horse battery');
    const answer = await authorize(web, authorizationParams(CLI_CLIENT_ID, redirect(40_000), pkce().challenge, { scope: 'profile tokens admin' }));
    expect(new URL(answer.location!).searchParams.get('error')).toBe('invalid_scope');
  });

  it('signed out: the sign-in page first', async () => {
    const { webClient } = await import('../support/web-client.js');
    const answer = await authorize(webClient(api), authorizationParams(CLI_CLIENT_ID, redirect(40_001), pkce().challenge, { scope: 'profile' }));
    expect(answer.status).toBe(303);
    expect(answer.location).toMatch(/^\/login\?next=/);
  });
});
