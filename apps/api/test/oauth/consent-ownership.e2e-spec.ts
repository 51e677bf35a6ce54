import { OAUTH_ROUTES } from '@prospect/contract';
import { askForReset, latestLink, resetWith } from '../support/account-flows.js';
import { createUser, registerClient } from '../support/fixtures.js';
import { startAppWithMail } from '../support/mailing-app.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import type { TestApp } from '../support/test-app.js';
import { signInAs, webClient, type WebClient } from '../support/web-client.js';
import { approveIn, authorizationParams, pkce } from './code-flow-support.js';

const SQUATTERS_PASSWORD = 'correct horse battery';
const OWNERS_PASSWORD = 'the owner alone knows this';
const REDIRECT = 'https://tool.example.com/callback';

/**
 * Issue #43, finding 3: a remembered consent is bound to the account state it was given under.
 * Without address verification (REQUIRE_EMAIL_VERIFICATION=false), whoever signs up first with
 * someone's address can approve an app; the owner's reset, which takes the account back, ends
 * that approval with everything else the squatter set up.
 */
describe('a consent ends with the account state it was given under', () => {
  let api: TestApp;
  let smtp: SmtpSink;
  beforeAll(async () => {
    ({ api, smtp } = await startAppWithMail({ env: { REQUIRE_EMAIL_VERIFICATION: 'false' } }));
    await registerClient(api, { id: 'squatters-app', name: 'Squatter’s App', allowedScopes: ['openid', 'profile'], redirectUris: [REDIRECT] });
  });
  afterAll(() => api?.close());

  /** GET /oauth/authorize with prompt=none, as an app asks silently: where the browser is sent. */
  const silently = async (web: WebClient) => {
    const params = authorizationParams('squatters-app', REDIRECT, pkce().challenge, { scope: 'openid profile', prompt: 'none' });
    const answer = await web.send('GET', `${OAUTH_ROUTES.authorize}?${new URLSearchParams(params)}`, undefined, { 'sec-fetch-site': 'none' });
    expect(answer.status).toBe(303);
    return new URL(answer.location!);
  };

  it('the owner’s reset ends the squatter’s consent: prompt=none asks again, and the app is no longer listed as connected', async () => {
    const address = `owner-${Date.now()}@example.com`;
    await createUser(api, { email: address, emailVerified: false });
    const squatter = await signInAs(api, address, SQUATTERS_PASSWORD);
    await approveIn(squatter, authorizationParams('squatters-app', REDIRECT, pkce().challenge, { scope: 'openid profile' }));
    expect((await silently(squatter)).searchParams.has('code')).toBe(true); // remembered for the squatter

    expect((await askForReset(api, address)).status).toBe(200);
    expect(await resetWith(webClient(api), await latestLink(api, smtp, address, '/password/reset'), OWNERS_PASSWORD)).toMatchObject({ status: 303 });

    const owner = await signInAs(api, address, OWNERS_PASSWORD);
    const silent = await silently(owner);
    expect(silent.searchParams.get('error')).toBe('consent_required');
    expect(silent.searchParams.has('code')).toBe(false);
    expect((await owner.send('GET', '/settings/tokens')).text).not.toContain('Squatter’s App');

    // Approved again by the owner, it is remembered for the owner.
    await approveIn(owner, authorizationParams('squatters-app', REDIRECT, pkce().challenge, { scope: 'openid profile' }));
    expect((await silently(owner)).searchParams.has('code')).toBe(true);
  });
});
