import { EmailVerificationService } from '../../src/accounts/email-verification.service.js';
import { InvitationsService } from '../../src/accounts/invitations.service.js';
import { Mailer } from '../../src/mail/mailer.js';
import { askForReset, enrolTotp, latestLink, totpCode } from '../support/account-flows.js';
import { FakeClock } from '../support/fake-clock.js';
import { federatedLinksOf } from '../support/federation-fixtures.js';
import { createUser } from '../support/fixtures.js';
import { request } from '../support/http.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import { signInAs, webClient } from '../support/web-client.js';
import { events, type Federation, PROVIDERS, signedInAs, signInThrough, startFederationWithMail } from './support/federation.js';
import { HttpBrowser } from './support/http-browser.js';

/**
 * Policy at the provider's edge (issue #34), with REQUIRE_SECOND_FACTOR on: a provider's amr that
 * shows a second factor stands for Prospect's own, sudo mode goes back to the provider for a fresh
 * sign-in, and `enforce` ends password sign-in, reset mail and passwords set by invitation for its
 * domains at once.
 */
describe('policy at the identity provider’s edge', () => {
  const clock = new FakeClock(Date.now());
  let smtp: SmtpSink;
  let fed: Federation;
  beforeAll(async () => ({ fed, smtp } = await startFederationWithMail({ clock, env: { REQUIRE_SECOND_FACTOR: 'true', SUDO_SECONDS: '600' } })));
  afterAll(() => fed?.close());

  let n = 0;
  function providerUser(amr: string[]) {
    n += 1;
    const user = { sub: `policy-${n}`, email: `policy${n}@acme.test`, email_verified: true, name: `Policy ${n}`, amr };
    fed.idp.users.set(user.sub, user);
    return user;
  }

  it('a provider’s amr showing a second factor satisfies REQUIRE_SECOND_FACTOR; without one, Prospect asks for its own', async () => {
    const strong = providerUser(['pwd', 'otp']);
    const browser = new HttpBrowser();
    expect((await signInThrough(browser, fed.api, '/login/sso/acme', strong.sub)).status).toBe(303);
    expect(await signedInAs(browser, fed.api)).toBe(strong.email);
    expect((await events(fed.api, 'federation.login')).at(-1)!.detail).toMatchObject({ secondFactor: 'provider' });

    const weak = providerUser(['pwd']);
    const other = new HttpBrowser();
    expect((await signInThrough(other, fed.api, '/login/sso/acme', weak.sub)).status).toBe(303);
    const tokens = await other.request(`${fed.api.baseUrl}/settings/tokens`);
    expect(tokens.status).toBe(303);
    expect(tokens.location?.pathname).toBe('/settings/security');
  });

  it('sudo mode goes back to the provider for a fresh sign-in (prompt=login, max_age=0), of the identity linked to this person only', async () => {
    const person = providerUser(['mfa']);
    const intruder = providerUser(['mfa']);
    const browser = new HttpBrowser();
    await signInThrough(browser, fed.api, '/login/sso/acme', person.sub);
    clock.advanceSeconds(601); // sudo mode lapsed
    const sudo = await browser.request(`${fed.api.baseUrl}/sudo?next=%2Fsettings%2Ftokens`);
    expect(sudo.text).toContain('Confirm with Acme SSO');

    let asked: URL | undefined;
    const record = (next: URL) => {
      if (next.pathname === '/auth') asked = next;
      return next;
    };
    // The provider has a session, yet asks again: its sign-in page comes back.
    const atProvider = await browser.follow(`${fed.api.baseUrl}/sudo/sso/acme?next=%2Fsettings%2Ftokens`, { rewrite: record });
    expect(atProvider.text).toContain('Sign in to the test provider');
    const apiOrigin = new URL(fed.api.baseUrl).origin;
    const confirmed = await browser.follow(`${atProvider.url.origin}${atProvider.url.pathname}/login`, {
      form: { username: person.sub },
      stop: (next) => next.origin === apiOrigin && !next.pathname.endsWith('/callback'),
    });
    expect(asked?.searchParams.get('prompt')).toBe('login');
    expect(asked?.searchParams.get('max_age')).toBe('0');
    expect(confirmed.status).toBe(303);
    expect(confirmed.location?.pathname).toBe('/settings/tokens');
    expect((await events(fed.api, 'web.sudo')).at(-1)!.detail).toMatchObject({ with: 'provider', providerId: 'acme' });

    // Someone else's provider account does not confirm this session (this browser signed out at the provider, someone else signs in there).
    clock.advanceSeconds(601);
    browser.forget(new URL(fed.idp.issuer).hostname);
    const before = (await events(fed.api, 'web.sudo')).length;
    const refused = await signInThrough(browser, fed.api, '/sudo/sso/acme?next=%2Fsettings%2Ftokens', intruder.sub);
    expect(refused.status).toBe(403);
    expect((await events(fed.api, 'web.sudo')).length).toBe(before);
    // A browser not signed in is sent to sign in first.
    const elsewhere = await new HttpBrowser().request(`${fed.api.baseUrl}/sudo/sso/acme`);
    expect(elsewhere.location?.pathname).toBe('/login');
  });

  it('enforce ends password sign-in, reset mail, reset links and invitation passwords for its domains at once; other domains keep theirs', async () => {
    const member = await createUser(fed.api, { email: `member${n}@acme.test` });
    const outsider = await createUser(fed.api, { email: `outsider${n}@example.com` });
    await askForReset(fed.api, member.email);
    const resetLink = await latestLink(fed.api, smtp, member.email, '/password/reset');
    await fed.api.app.get(InvitationsService).invite({ email: `invited${n}@acme.test`, name: 'Invited' }, fed.admin.id, null);
    const invitation = await latestLink(fed.api, smtp, `invited${n}@acme.test`, '/invitation');

    expect((await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: true })).body.enforce).toBe(true);
    try {
      // The password form refuses the domain, checks no password, and points to the provider.
      const web = webClient(fed.api);
      const form = await web.send('GET', '/login');
      const refused = await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email: member.email, password: 'correct horse battery' });
      expect(refused.status).toBe(200);
      expect(refused.text).toContain('signs in with Acme SSO');
      const meta = /<meta http-equiv="refresh" content="0;url=([^"]+)">/.exec(refused.text)?.[1]?.replace(/&amp;/g, '&').replace(/&#x3D;/g, '=');
      const onward = new URL(meta!, fed.api.baseUrl);
      expect(onward.pathname).toBe('/login/sso/acme');
      expect(onward.searchParams.get('login_hint')).toBe(member.email);
      expect((await web.send('GET', '/settings/tokens')).status).toBe(303);

      const signup = await web.send('POST', '/signup', { _csrf: web.csrfFrom(form.text), name: 'New', email: `new${n}@acme.test`, password: 'correct horse battery' });
      expect(signup.status).toBe(403);

      const mailsBefore = smtp.to(member.email).length;
      expect((await askForReset(fed.api, member.email)).status).toBe(200);
      await fed.api.app.get(Mailer).settled();
      expect(smtp.to(member.email).length).toBe(mailsBefore);
      expect((await web.send('GET', resetLink.pathname + resetLink.search)).status).toBe(410);
      expect((await web.send('GET', invitation.pathname + invitation.search)).status).toBe(410);
      const adminReset = await request(fed.api, 'POST', `/api/admin/users/${member.id}/reset-link`, { token: fed.adminToken });
      expect(adminReset.status).toBe(403);

      // Another domain signs in with its password as before.
      const other = webClient(fed.api);
      const otherForm = await other.send('GET', '/login');
      const ok = await other.send('POST', '/login', { _csrf: other.csrfFrom(otherForm.text), email: outsider.email, password: 'correct horse battery' });
      expect(ok.status).toBe(303);
    } finally {
      await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: false });
    }
    // Without enforce, the member's password works again.
    const web = webClient(fed.api);
    const form = await web.send('GET', '/login');
    expect((await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email: member.email, password: 'correct horse battery' })).status).toBe(303);
    expect((await events(fed.api, 'admin.identity_provider_update')).at(-1)!.detail).toMatchObject({ providerId: 'acme', enforce: false });
  });

  it('enforce turned on between the password and the code refuses the second step; linking with the password still works', async () => {
    const member = await createUser(fed.api, { email: `halfway${n}@acme.test` });
    const key = await enrolTotp(await signInAs(fed.api, member.email, 'correct horse battery'), () => clock.now().getTime());
    clock.advanceSeconds(31);
    const web = webClient(fed.api);
    const form = await web.send('GET', '/login');
    expect((await web.send('POST', '/login', { _csrf: web.csrfFrom(form.text), email: member.email, password: 'correct horse battery' })).location).toBe('/login/code');
    await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: true });
    try {
      const codePage = await web.send('GET', '/login/code');
      const refused = await web.send('POST', '/login/code', { _csrf: web.csrfFrom(codePage.text), code: totpCode(key, clock.now().getTime()) });
      expect(refused.status).toBe(403);
      expect(refused.text).toContain('signs in with Acme SSO');
      expect((await web.send('GET', '/settings/tokens')).status).toBe(303);
      expect((await events(fed.api, 'federation.login_refused')).at(-1)).toMatchObject({ user_id: member.id, detail: { reason: 'sign-in without the enforcing provider' } });

      // Through the provider, the account is linked after its password (and code): proof for linking is not a sign-in by password.
      const person = { sub: `halfway-${n}`, email: member.email, email_verified: true, amr: ['pwd', 'otp'] };
      fed.idp.users.set(person.sub, person);
      const browser = new HttpBrowser();
      expect((await signInThrough(browser, fed.api, '/login/sso/acme', person.sub)).location?.pathname).toBe('/login/link');
      const page = await browser.request(`${fed.api.baseUrl}/login/link`);
      expect((await browser.request(`${fed.api.baseUrl}/login/link/password`, { form: { _csrf: HttpBrowser.csrfOf(page.text), password: 'correct horse battery' } })).location?.pathname).toBe('/login/code');
      clock.advanceSeconds(31);
      const second = await browser.request(`${fed.api.baseUrl}/login/code`);
      expect((await browser.request(`${fed.api.baseUrl}/login/code`, { form: { _csrf: HttpBrowser.csrfOf(second.text), code: totpCode(key, clock.now().getTime()) } })).location?.pathname).toBe('/login/link/finish');
      const finish = await browser.request(`${fed.api.baseUrl}/login/link/finish`);
      expect((await browser.request(`${fed.api.baseUrl}/login/link/finish`, { form: { _csrf: HttpBrowser.csrfOf(finish.text) } })).status).toBe(303);
      expect((await federatedLinksOf(fed.api, { subject: person.sub })).map((link) => link.userId)).toEqual([member.id]);
      expect(await signedInAs(browser, fed.api)).toBe(member.email);
    } finally {
      await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: false });
    }
  });

  it('a half-finished sign-in through the provider belongs to its person: another person signing in in that browser does not inherit it (issue #43, finding 4)', async () => {
    const base = fed.api.baseUrl;
    // Alice's account is made through the provider, and she sets up her own authenticator app.
    const alice = providerUser(['mfa']);
    const hers = new HttpBrowser();
    await signInThrough(hers, fed.api, '/login/sso/acme', alice.sub);
    const security = await hers.request(`${base}/settings/security`);
    const begun = await hers.request(`${base}/settings/security/totp`, { form: { _csrf: HttpBrowser.csrfOf(security.text) } });
    const key = /<code class="totp-key">([A-Z2-7 ]+)<\/code>/.exec(begun.text)![1]!;
    expect((await hers.request(`${base}/settings/security/totp/confirm`, { form: { _csrf: HttpBrowser.csrfOf(begun.text), code: totpCode(key, clock.now().getTime()) } })).status).toBe(200);

    // In a shared browser, her provider shows no second factor: Prospect asks for her code, and she walks away.
    fed.idp.users.set(alice.sub, { ...alice, amr: ['pwd'] });
    const shared = new HttpBrowser();
    expect((await signInThrough(shared, fed.api, '/login/sso/acme', alice.sub)).location?.pathname).toBe('/login/code');

    // Bob, of the enforced domain, confirms his address with his password in that browser: his
    // sign-in must go through the provider, whoever was half signed in there before.
    const bob = await createUser(fed.api, { email: `bob${n}@acme.test`, emailVerified: false });
    await fed.api.app.get(EmailVerificationService).send(bob.id, '/', { resend: false });
    const link = await latestLink(fed.api, smtp, bob.email, '/verify-email');
    await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: true });
    try {
      const page = await shared.request(`${base}${link.pathname}${link.search}`);
      const loginsBefore = (await events(fed.api, 'federation.login')).length;
      const confirmed = await shared.request(`${base}/verify-email`, {
        form: { _csrf: HttpBrowser.csrfOf(page.text), token: link.searchParams.get('token')!, password: 'correct horse battery' },
      });
      expect(confirmed.status).toBe(403);
      expect(confirmed.text).toContain('signs in with Acme SSO');
      expect(await signedInAs(shared, fed.api)).toBeNull();
      expect((await events(fed.api, 'federation.login')).length).toBe(loginsBefore); // no link of Alice's recorded for Bob
      expect((await events(fed.api, 'federation.login_refused')).at(-1)).toMatchObject({ user_id: bob.id });
      // And Alice's half-finished sign-in is gone from that browser.
      expect((await shared.request(`${base}/login/code`)).status).toBe(303);
    } finally {
      await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: false });
    }
  });

  it('an enforced person confirms sudo mode with the provider, not a password', async () => {
    const person = providerUser(['mfa']);
    const browser = new HttpBrowser();
    await signInThrough(browser, fed.api, '/login/sso/acme', person.sub);
    await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: true });
    try {
      clock.advanceSeconds(601);
      const page = await browser.request(`${fed.api.baseUrl}/sudo?next=%2Fsettings%2Ftokens`);
      expect(page.text).toContain('Confirm with Acme SSO');
      expect(page.text).not.toContain('name="password"');
      const password = await browser.request(`${fed.api.baseUrl}/sudo`, { form: { _csrf: HttpBrowser.csrfOf(page.text), next: '/settings/tokens', password: 'anything' } });
      expect(password.status).toBe(403);
      expect(password.text).toContain('confirm with Acme SSO');
    } finally {
      await fed.call('PATCH', `${PROVIDERS}/acme`, { enforce: false });
    }
  });
});
