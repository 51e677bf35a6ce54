import { ROUTES } from '@prospect/contract';
import { SecondFactorsService } from '../../src/accounts/second-factors.service.js';
import { FederationChecks } from '../../src/federation/federation-checks.service.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { enrolTotp, latestLink, totpCode } from '../support/account-flows.js';
import { FakeClock } from '../support/fake-clock.js';
import { federatedLinksOf, markLinkRefusedOnly, markProviderDisabledOnly } from '../support/federation-fixtures.js';
import { createUser, hasPassword, userByEmail } from '../support/fixtures.js';
import { get, post } from '../support/http.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import { signInAs } from '../support/web-client.js';
import { countWebSessions, sessionLinksOf } from '../support/web-session-fixtures.js';
import { answerFor, events, type Federation, PROVIDERS, signedInAs, signInThrough, startFederationWithMail } from './support/federation.js';
import { HttpBrowser } from './support/http-browser.js';

/**
 * Sign-in through a team's own OpenID provider (issue #34) over plain HTTP, against a real
 * provider (node-oidc-provider): links by (issuer, subject), the answers that must not sign
 * anyone in, linking an account that exists (refused without proof, done with it), a disabled
 * provider, a leaver, and two first sign-ins at once.
 */
describe('sign-in through an identity provider', () => {
  const clock = new FakeClock(Date.now());
  let smtp: SmtpSink;
  let fed: Federation;
  beforeAll(async () => ({ fed, smtp } = await startFederationWithMail({ clock, env: { FEDERATION_CHECK_SECONDS: '600' } })));
  afterAll(() => fed?.close());

  let n = 0;
  /** A person of the provider's directory, with a verified acme.test address unless told otherwise. */
  function providerUser(overrides: Partial<{ email: string; email_verified: boolean | undefined; name: string; amr: string[] }> = {}) {
    n += 1;
    const sub = `person-${n}`;
    const user: { sub: string; email: string; email_verified?: boolean; name: string; amr?: string[] } = { sub, email: `person${n}@acme.test`, email_verified: true, name: `Person ${n}`, ...overrides };
    if ('email_verified' in overrides && overrides.email_verified === undefined) delete user.email_verified;
    fed.idp.users.set(sub, user);
    return user;
  }
  /** The account with this address (none or one), with whether it has a password and a verified address. */
  const accounts = async (email: string) => {
    const account = await userByEmail(fed.api, email);
    return account ? [{ id: account.id, noPassword: !(await hasPassword(fed.api, account.id)), verified: account.emailVerifiedAt !== null }] : [];
  };
  /** The links of the provider's subject: which account each goes to. */
  const linksOf = async (sub: string) => (await federatedLinksOf(fed.api, { subject: sub })).map(({ id, userId }) => ({ id, userId }));
  const lastRefusal = async () => (await events(fed.api, 'federation.login_refused')).at(-1)!;
  const now = () => clock.now().getTime();

  it('a first sign-in makes a verified account without a password, linked by issuer and subject; the next one signs in to it', async () => {
    const person = providerUser();
    const browser = new HttpBrowser();
    const first = await signInThrough(browser, fed.api, '/login/sso/acme?next=%2Fsettings%2Faccount', person.sub);
    expect(first.status).toBe(303);
    expect(first.location?.pathname).toBe('/settings/account');
    expect(await signedInAs(browser, fed.api)).toBe(person.email);
    const [account] = await accounts(person.email);
    expect(account).toMatchObject({ noPassword: true, verified: true });
    expect(await linksOf(person.sub)).toEqual([{ id: expect.any(String), userId: account.id }]);
    expect((await events(fed.api, 'federation.signup')).map((e) => e.user_id)).toContain(account.id);
    // The session records the link it came through.
    const [sessionLink] = await sessionLinksOf(fed.api, account.id);
    expect(sessionLink).toBe((await linksOf(person.sub))[0]!.id);

    // Another browser: the same account, found by (issuer, subject).
    const again = new HttpBrowser();
    expect((await signInThrough(again, fed.api, '/login/sso/acme', person.sub)).status).toBe(303);
    expect(await signedInAs(again, fed.api)).toBe(person.email);
    expect(await accounts(person.email)).toHaveLength(1);
    const logins = (await events(fed.api, 'federation.login')).filter((e) => e.user_id === account.id);
    expect(logins).toHaveLength(2);
    expect(logins[0]!.detail).toMatchObject({ label: 'Acme SSO', providerId: 'acme' });

    // The link is by subject, not by address: the provider's address changing changes nothing.
    fed.idp.users.set(person.sub, { ...person, email: `renamed${n}@acme.test` });
    const renamed = new HttpBrowser();
    expect((await signInThrough(renamed, fed.api, '/login/sso/acme', person.sub)).status).toBe(303);
    expect(await signedInAs(renamed, fed.api)).toBe(person.email);
    fed.idp.users.set(person.sub, person);
  });

  it('refuses an answer whose state, nonce or iss does not match the sign-in this browser started, one it never started, and one used twice', async () => {
    const person = providerUser();
    const param = (where: (url: URL) => boolean, name: string, value: string | null) => (next: URL) => {
      if (!where(next)) return next;
      const changed = new URL(next);
      if (value === null) changed.searchParams.delete(name);
      else changed.searchParams.set(name, value);
      return changed;
    };
    const atCallback = (url: URL) => url.pathname.endsWith('/callback');
    const atProvider = (url: URL) => url.pathname === '/auth';
    const cases: Array<[string, (next: URL) => URL, RegExp]> = [
      ['a forged state', param(atCallback, 'state', 'forged-state'), /state/],
      ['a nonce other than the one sent', param(atProvider, 'nonce', 'not-the-nonce-prospect-sent'), /nonce/],
      ['another issuer in iss (RFC 9207)', param(atCallback, 'iss', 'https://evil.example'), /iss/],
      ['no iss where the provider sends one', param(atCallback, 'iss', null), /iss/],
    ];
    for (const [what, rewrite, reason] of cases) {
      const browser = new HttpBrowser();
      const answer = await signInThrough(browser, fed.api, '/login/sso/acme', person.sub, rewrite);
      expect([what, answer.status]).toEqual([what, 401]);
      expect(answer.text).toContain('did not match the sign-in this browser started');
      expect(await signedInAs(browser, fed.api)).toBeNull();
      expect((await lastRefusal()).detail.reason).toMatch(reason);
    }
    expect(await accounts(person.email)).toEqual([]);

    // An answer delivered to a browser that never started the sign-in (login CSRF): no flight, no sign-in.
    const victim = new HttpBrowser();
    const planted = await answerFor(new HttpBrowser(), fed.api, '/login/sso/acme', person.sub);
    const refused = await victim.request(planted);
    expect(refused.status).toBe(400);
    expect(await signedInAs(victim, fed.api)).toBeNull();
    expect((await lastRefusal()).detail).toMatchObject({ reason: 'no sign-in started in this browser', providerId: 'acme', count: 1 });

    // The right browser, once; the same answer again is refused (the flight is spent).
    const owner = new HttpBrowser();
    const answer = await answerFor(owner, fed.api, '/login/sso/acme', person.sub);
    expect((await owner.request(answer)).status).toBe(303);
    expect((await owner.request(answer)).status).toBe(400);
    expect(await accounts(person.email)).toHaveLength(1);
  });

  it('counts an address only when the provider verified it (email_verified: true) and it is in the provider’s domains', async () => {
    const unverified = providerUser({ email_verified: false });
    const silent = providerUser({ email_verified: undefined });
    const elsewhere = providerUser({ email: 'someone@elsewhere.test' });
    for (const person of [unverified, silent, elsewhere]) {
      const browser = new HttpBrowser();
      const answer = await signInThrough(browser, fed.api, '/login/sso/acme', person.sub);
      expect(answer.status).toBe(403);
      expect(await signedInAs(browser, fed.api)).toBeNull();
      expect(await accounts(person.email)).toEqual([]);
      expect(await linksOf(person.sub)).toEqual([]);
    }
    // Written at once (the provider vouched for an identity), not counted with the anonymous ones.
    const reasons = (await events(fed.api, 'federation.login_refused')).filter((e) => e.detail.count === undefined).slice(-3).map((e) => e.detail.reason);
    expect(reasons).toEqual([expect.stringMatching(/email_verified/), expect.stringMatching(/email_verified/), expect.stringMatching(/domains/)]);

    // Nor does an unverified address reach an account that has it: no proof is even offered.
    const owner = await createUser(fed.api, { email: `owner${n}@acme.test` });
    const impostor = providerUser({ email: owner.email, email_verified: false });
    const browser = new HttpBrowser();
    expect((await signInThrough(browser, fed.api, '/login/sso/acme', impostor.sub)).status).toBe(403);
    expect((await browser.request(`${fed.api.baseUrl}/login/link`)).status).toBe(410);
  });

  it('makes no account when the provider does not allow sign-up', async () => {
    expect((await fed.call('PATCH', `${PROVIDERS}/acme`, { allowSignUp: false })).body.allowSignUp).toBe(false);
    try {
      const person = providerUser();
      const browser = new HttpBrowser();
      const answer = await signInThrough(browser, fed.api, '/login/sso/acme', person.sub);
      expect(answer.status).toBe(403);
      expect(answer.text).toContain('Ask an administrator to invite you');
      expect(await accounts(person.email)).toEqual([]);
    } finally {
      await fed.call('PATCH', `${PROVIDERS}/acme`, { allowSignUp: true });
    }
  });

  it('links an account that has the address only after proof in the same browser: the mailed link ends everything set up before', async () => {
    // Someone signed up with the address and a password, never proved it, and keeps a session and a token.
    const squatter = await createUser(fed.api, { email: `carol${n}@acme.test`, emailVerified: false });
    const squatterBrowser = await signInAs(fed.api, squatter.email, 'correct horse battery');
    const squatterToken = (await fed.api.app.get(TokensService).issue({ userId: squatter.id, origin: 'direct' })).accessToken;
    const carol = providerUser({ email: squatter.email });

    const browser = new HttpBrowser();
    const answer = await signInThrough(browser, fed.api, '/login/sso/acme?next=%2Fsettings%2Faccount', carol.sub);
    expect(answer.location?.pathname).toBe('/login/link');
    // No proof yet: not signed in, not linked.
    expect(await signedInAs(browser, fed.api)).toBeNull();
    expect(await linksOf(carol.sub)).toEqual([]);
    const page = await browser.request(`${fed.api.baseUrl}/login/link`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('already has a Prospect account');
    const csrf = HttpBrowser.csrfOf(page.text);
    // Carol does not know the squatter's password.
    const wrong = await browser.request(`${fed.api.baseUrl}/login/link/password`, { form: { _csrf: csrf, password: 'a guess of carol' } });
    expect(wrong.status).toBe(401);
    expect(await linksOf(carol.sub)).toEqual([]);

    const sent = await browser.request(`${fed.api.baseUrl}/login/link/mail`, { form: { _csrf: csrf } });
    expect(sent.status).toBe(200);
    const link = await latestLink(fed.api, smtp, squatter.email, '/login/link/confirm');
    // Only in the browser that signed in with the provider.
    expect((await new HttpBrowser().request(link)).status).toBe(410);
    expect((await squatterBrowser.send('GET', link.pathname + link.search)).status).toBe(410);
    const confirm = await browser.request(link);
    expect(confirm.status).toBe(200);
    const done = await browser.request(`${fed.api.baseUrl}/login/link/confirm`, { form: { _csrf: HttpBrowser.csrfOf(confirm.text), token: link.searchParams.get('token')! } });
    expect(done.status).toBe(303);
    expect(done.location?.pathname).toBe('/settings/account');
    expect(await signedInAs(browser, fed.api)).toBe(squatter.email);
    expect(await linksOf(carol.sub)).toEqual([{ id: expect.any(String), userId: squatter.id }]);

    // The squatter's password, session and token are gone; the address counts as verified.
    expect(await accounts(squatter.email)).toEqual([{ id: squatter.id, noPassword: true, verified: true }]);
    expect((await squatterBrowser.send('GET', '/settings/tokens')).status).toBe(303);
    expect((await get(fed.api, '/api/cli/auth/me', squatterToken)).status).toBe(401);
    const linked = (await events(fed.api, 'federation.link')).at(-1)!;
    expect(linked).toMatchObject({ user_id: squatter.id, detail: { providerId: 'acme', proof: expect.stringMatching(/mailed/) } });
    // The mailed link is spent.
    expect((await browser.request(link)).status).toBe(410);
  });

  it('links an account after its password and second factor in the same browser, keeping what it had', async () => {
    const dave = await createUser(fed.api, { email: `dave${n}@acme.test` });
    const daveBrowser = await signInAs(fed.api, dave.email, 'correct horse battery');
    const key = await enrolTotp(daveBrowser, now);
    clock.advanceSeconds(31); // the code of the next step must be a later one
    const person = providerUser({ email: dave.email });

    const browser = new HttpBrowser();
    expect((await signInThrough(browser, fed.api, '/login/sso/acme?next=%2Fsettings%2Fsecurity', person.sub)).location?.pathname).toBe('/login/link');
    const page = await browser.request(`${fed.api.baseUrl}/login/link`);
    const password = await browser.request(`${fed.api.baseUrl}/login/link/password`, { form: { _csrf: HttpBrowser.csrfOf(page.text), password: 'correct horse battery' } });
    expect(password.status).toBe(303);
    expect(password.location?.pathname).toBe('/login/code');
    // Half signed in: nothing is linked before the second factor.
    expect(await linksOf(person.sub)).toEqual([]);
    const codePage = await browser.request(`${fed.api.baseUrl}/login/code`);
    const code = await browser.request(`${fed.api.baseUrl}/login/code`, { form: { _csrf: HttpBrowser.csrfOf(codePage.text), code: totpCode(key, now()) } });
    expect(code.location?.pathname).toBe('/login/link/finish');
    const finishPage = await browser.request(`${fed.api.baseUrl}/login/link/finish`);
    expect(finishPage.status).toBe(200);
    const finished = await browser.request(`${fed.api.baseUrl}/login/link/finish`, { form: { _csrf: HttpBrowser.csrfOf(finishPage.text) } });
    expect(finished.location?.pathname).toBe('/settings/security');
    expect(await linksOf(person.sub)).toEqual([{ id: expect.any(String), userId: dave.id }]);
    // What the account had stays: its password, its app, its other browser.
    expect(await accounts(dave.email)).toEqual([{ id: dave.id, noPassword: false, verified: true }]);
    expect(await fed.api.app.get(SecondFactorsService).hasTotp(dave.id)).toBe(true);
    expect((await daveBrowser.send('GET', '/settings/tokens')).status).toBe(200);

    // From now on the provider signs Dave in; with his own second factor, as the provider showed none.
    clock.advanceSeconds(31);
    const next = new HttpBrowser();
    const again = await signInThrough(next, fed.api, '/login/sso/acme', person.sub);
    expect(again.location?.pathname).toBe('/login/code');
    const secondPage = await next.request(`${fed.api.baseUrl}/login/code`);
    expect((await next.request(`${fed.api.baseUrl}/login/code`, { form: { _csrf: HttpBrowser.csrfOf(secondPage.text), code: totpCode(key, now()) } })).status).toBe(303);
    expect(await signedInAs(next, fed.api)).toBe(dave.email);
    expect((await events(fed.api, 'federation.login')).at(-1)).toMatchObject({ user_id: dave.id, detail: { secondFactor: 'totp', label: 'Acme SSO' } });
  });

  it('makes one account of two first sign-ins of the same person at once', async () => {
    const person = providerUser();
    const [a, b] = [new HttpBrowser(), new HttpBrowser()];
    const answers = [await answerFor(a, fed.api, '/login/sso/acme', person.sub), await answerFor(b, fed.api, '/login/sso/acme', person.sub)];
    const [first, second] = await Promise.all([a.request(answers[0]!), b.request(answers[1]!)]);
    expect([first.status, second.status]).toEqual([303, 303]);
    const rows = await accounts(person.email);
    expect(rows).toHaveLength(1);
    expect(await linksOf(person.sub)).toEqual([{ id: expect.any(String), userId: rows[0].id }]);
    expect(await signedInAs(a, fed.api)).toBe(person.email);
    expect(await signedInAs(b, fed.api)).toBe(person.email);
  });

  it('disabling the provider ends the sessions it started and refuses its sign-ins, one in flight too; a password session stays', async () => {
    const person = providerUser();
    const browser = new HttpBrowser();
    await signInThrough(browser, fed.api, '/login/sso/acme', person.sub);
    expect(await signedInAs(browser, fed.api)).toBe(person.email);
    // Frank's account is linked, and he also signed in elsewhere with his password.
    const frank = await createUser(fed.api, { email: `frank${n}@acme.test` });
    const frankPassword = await signInAs(fed.api, frank.email, 'correct horse battery');
    const frankAtProvider = providerUser({ email: frank.email });
    const frankBrowser = new HttpBrowser();
    await signInThrough(frankBrowser, fed.api, '/login/sso/acme', frankAtProvider.sub);
    const linkPage = await frankBrowser.request(`${fed.api.baseUrl}/login/link`);
    await frankBrowser.request(`${fed.api.baseUrl}/login/link/password`, { form: { _csrf: HttpBrowser.csrfOf(linkPage.text), password: 'correct horse battery' } });
    expect(await signedInAs(frankBrowser, fed.api)).toBe(frank.email);
    const inFlight = new HttpBrowser();
    const pending = await answerFor(inFlight, fed.api, '/login/sso/acme', providerUser().sub);

    const disabled = await fed.call('PATCH', `${PROVIDERS}/acme`, { disabled: true });
    expect(disabled.status).toBe(200);
    expect(disabled.body.disabled).toBe(true);
    try {
      expect(await signedInAs(browser, fed.api)).toBeNull();
      expect(await signedInAs(frankBrowser, fed.api)).toBeNull();
      expect((await frankPassword.send('GET', '/settings/tokens')).status).toBe(200);
      expect(await countWebSessions(fed.api, { federated: true })).toBe(0);
      expect((await inFlight.request(pending)).status).toBe(403);
      expect(await signedInAs(inFlight, fed.api)).toBeNull();
      const start = await new HttpBrowser().request(`${fed.api.baseUrl}/login/sso/acme`);
      expect(start.status).toBe(403);
      expect(start.text).toContain('turned off');
      expect((await new HttpBrowser().request(`${fed.api.baseUrl}/login`)).text).not.toContain('Continue with Acme SSO');
      expect((await events(fed.api, 'admin.identity_provider_disable')).at(-1)!.detail).toMatchObject({ providerId: 'acme', sessions: expect.any(Number) });
    } finally {
      await fed.call('PATCH', `${PROVIDERS}/acme`, { disabled: false });
    }
    expect((await new HttpBrowser().request(`${fed.api.baseUrl}/login`)).text).toContain('Continue with Acme SSO');
    expect((await signInThrough(browser, fed.api, '/login/sso/acme', person.sub)).status).toBe(303);
    expect(await signedInAs(browser, fed.api)).toBe(person.email);
  });

  it('a session ends at its next request once its link is refused or its provider disabled, even where its row was missed', async () => {
    const person = providerUser();
    const browser = new HttpBrowser();
    await signInThrough(browser, fed.api, '/login/sso/acme', person.sub);
    // As if a request in flight had written the session back after the statement that ended it.
    await markLinkRefusedOnly(fed.api, person.sub);
    expect(await signedInAs(browser, fed.api)).toBeNull();
    await signInThrough(browser, fed.api, '/login/sso/acme', person.sub); // the provider says yes again: the refusal is lifted
    expect(await signedInAs(browser, fed.api)).toBe(person.email);
    await markProviderDisabledOnly(fed.api, 'acme', true);
    try {
      expect(await signedInAs(browser, fed.api)).toBeNull();
    } finally {
      await markProviderDisabledOnly(fed.api, 'acme', false);
    }
  });

  it('a leaver: when the provider refuses a refresh (invalid_grant) their sessions end at the next check; the others are verified again', async () => {
    const leaver = providerUser();
    const stayer = providerUser();
    const [leaverBrowser, stayerBrowser] = [new HttpBrowser(), new HttpBrowser()];
    await signInThrough(leaverBrowser, fed.api, '/login/sso/acme', leaver.sub);
    await signInThrough(stayerBrowser, fed.api, '/login/sso/acme', stayer.sub);
    expect((await federatedLinksOf(fed.api, { subject: leaver.sub }))[0]!.hasRefreshToken).toBe(true);
    // The leaver's CLI, approved in the session the provider signed in.
    const start = await post(fed.api, ROUTES.deviceStart, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop' });
    const approval = await leaverBrowser.request(`${fed.api.baseUrl}/device?user_code=${start.body.userCode}`);
    const approved = await leaverBrowser.request(`${fed.api.baseUrl}/device/approve`, { form: { _csrf: HttpBrowser.csrfOf(approval.text), user_code: start.body.userCode } });
    expect(approved.status).toBe(200);
    const cli = (await post(fed.api, ROUTES.devicePoll, { deviceCode: start.body.deviceCode })).body;
    expect((await get(fed.api, ROUTES.me, cli.accessToken)).status).toBe(200);
    const checks = fed.api.app.get(FederationChecks);
    // Not due yet.
    expect((await checks.checkDue()).checked).toBe(0);

    fed.idp.users.delete(leaver.sub); // gone from the directory
    clock.advanceSeconds(601);
    const round = await checks.checkDue();
    expect(round.refused).toBe(1);
    expect(await signedInAs(leaverBrowser, fed.api)).toBeNull();
    expect(await signedInAs(stayerBrowser, fed.api)).toBe(stayer.email);
    const [leaverLink] = await federatedLinksOf(fed.api, { subject: leaver.sub });
    expect(leaverLink!.refusedAt).not.toBeNull();
    const [stayerLink] = await federatedLinksOf(fed.api, { subject: stayer.sub });
    expect(stayerLink!.lastVerifiedAt.getTime()).toBe(now());
    const refusal = (await events(fed.api, 'federation.refused_by_provider')).at(-1)!;
    expect(refusal.detail).toMatchObject({ providerId: 'acme', reason: expect.stringMatching(/invalid_grant/), sessions: 1, grants: 1 });
    // What the leaver's session approved ends with it.
    expect((await get(fed.api, ROUTES.me, cli.accessToken)).status).toBe(401);
    expect((await post(fed.api, ROUTES.refresh, { refreshToken: cli.refreshToken })).status).toBe(401);
  });
});
