import { Secret, TOTP } from 'otpauth';
import { PasskeysRepository } from '../../src/accounts/passkeys.repository.js';
import { SecondFactorsService } from '../../src/accounts/second-factors.service.js';
import { Mailer } from '../../src/mail/mailer.js';
import { seal } from '../../src/common/sealed.js';
import { accountKey } from '../../src/rate-limits/rate-limits.js';
import { ServerSecrets } from '../../src/server-secrets/server-secrets.js';
import { askForReset, latestLink, resetWith } from '../support/account-flows.js';
import { FakeClock } from '../support/fake-clock.js';
import { countAuthEvents, createUser, forgetRateLimits, userById } from '../support/fixtures.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import type { TestApp } from '../support/test-app.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { postFrom, signIn, signInAs, webClient, type WebClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';
const NEW_PASSWORD = 'a brand new passphrase';

/** An authenticator app's code for `key` (as the page shows it) at the fake clock's time, `steps` steps of 30 s away. */
const codeFor = (key: string, clock: FakeClock, steps = 0) =>
  new TOTP({ secret: Secret.fromBase32(key.replace(/\s/g, '')), period: 30 }).generate({ timestamp: clock.now().getTime() + steps * 30_000 });

/**
 * Issue #31 item 5: the owner is never the one locked out. Every password check and every
 * second-step code counts the owner's recognised browser (a device cookie at /login and its
 * second step, the signed-in session once signed in) apart from everyone else; an attacker's
 * failures, however many and however parallel, never make the owner's right password or code a
 * 429 there, and still reach no more than the limit.
 */
describe('the owner is never the one locked out', () => {
  const clock = new FakeClock(Date.now());
  let smtp: SmtpSink;
  let api: TestApp;
  beforeAll(async () => ({ api, smtp } = await startAppWithMail({ clock })));
  afterAll(() => api?.close());
  /** Each test starts with no counters: every client is 127.0.0.1. */
  beforeEach(() => forgetRateLimits(api));

  /** Five wrong passwords for `email`, each from a new browser without cookies; then a new browser is refused even the right one (`password`). */
  const attackerBlocks = async (email: string, password = PASSWORD) => {
    for (let i = 0; i < 5; i++) expect((await signIn(webClient(api), email, 'wrong guess')).status).toBe(401);
    expect((await signIn(webClient(api), email, password)).status).toBe(429);
  };
  const events = (type: string, userId: string, reason?: string) => countAuthEvents(api, { type, userId, detail: reason === undefined ? {} : { reason } });

  describe('passwords asked of a signed-in person', () => {
    it('after five wrong sign-ins from elsewhere, bob on his signed-in browser confirms sudo, changes his address and password, and deletes the account with the right password', async () => {
      const bob = await createUser(api);
      const browser = await signInAs(api, bob.email, PASSWORD);
      await attackerBlocks(bob.email);

      const sudo = await postFrom(browser, '/sudo?next=%2Fsettings%2Ftokens', '/sudo', { password: PASSWORD, next: '/settings/tokens' });
      expect(sudo).toMatchObject({ status: 303, location: '/settings/tokens' });

      const newEmail = `bob-moved-${Date.now()}@example.com`;
      const address = await postFrom(browser, '/settings/account', '/settings/account/email', { email: newEmail, password: PASSWORD });
      expect(address.status).toBe(200);
      expect(address.text).toContain(`A link is on its way to <strong>${newEmail}</strong>`);
      await api.app.get(Mailer).settled();
      expect(smtp.to(newEmail).map((m) => m.subject)).toEqual(['Confirm your new e-mail address for Prospect']);

      const changed = await postFrom(browser, '/settings/account', '/settings/account/password', { current_password: PASSWORD, password: NEW_PASSWORD, password_again: NEW_PASSWORD });
      expect(changed).toMatchObject({ status: 303, location: '/settings/account?done=password' });

      // The account is still blocked for everyone else, with the old password and the new.
      expect((await signIn(webClient(api), bob.email, NEW_PASSWORD)).status).toBe(429);

      const deleted = await postFrom(browser, '/settings/account', '/settings/account/delete', { password: NEW_PASSWORD });
      expect(deleted).toMatchObject({ status: 303, location: '/login?account=deleted' });
      expect(await userById(api, bob.id)).toBeNull();
    });

    it('a stolen session gets 5 wrong passwords of 50 sent at once, blocks only itself, and bob on his own browser is not refused', async () => {
      const bob = await createUser(api);
      const own = await signInAs(api, bob.email, PASSWORD);
      const stolen = await signInAs(api, bob.email, PASSWORD); // another session of bob's, in a thief's hands
      const form = await stolen.send('GET', '/sudo?next=%2Fsettings%2Ftokens');
      const guesses = await Promise.all(Array.from({ length: 50 }, () => stolen.send('POST', '/sudo', { _csrf: stolen.csrfFrom(form.text), password: 'wrong guess', next: '/settings/tokens' })));
      // Counted before the password is checked: no more than 5 reach it, however many come at once.
      expect(guesses.filter((r) => r.status === 401)).toHaveLength(5);
      const refused = guesses.filter((r) => r.status === 429);
      expect(refused).toHaveLength(45);
      expect(Number(refused[0]!.headers['retry-after'])).toBeGreaterThan(14 * 60);
      expect((await stolen.send('POST', '/sudo', { _csrf: stolen.csrfFrom(form.text), password: PASSWORD, next: '/settings/tokens' })).status).toBe(429);

      // Bob's own browser, and a new browser at /login, are not blocked by the thief's failures.
      expect(await postFrom(own, '/sudo?next=%2Fsettings%2Ftokens', '/sudo', { password: PASSWORD, next: '/settings/tokens' })).toMatchObject({ status: 303 });
      expect((await signIn(webClient(api), bob.email, PASSWORD)).status).toBe(303);
    });
  });

  describe('a device cookie ends with the account state it was issued under', () => {
    /** A browser that signed in to `email` and signed out again: it holds a device cookie for the account. */
    const signedInBefore = async (email: string, password = PASSWORD) => {
      const web = await signInAs(api, email, password);
      expect((await postFrom(web, '/settings/tokens', '/logout')).status).toBe(303);
      return web;
    };

    it('a thief’s browser that signed in with the old password is not recognised once bob changes it; bob’s own browser still is', async () => {
      const bob = await createUser(api);
      const thief = await signedInBefore(bob.email);
      const own = await signInAs(api, bob.email, PASSWORD);
      expect(await postFrom(own, '/settings/account', '/settings/account/password', { current_password: PASSWORD, password: NEW_PASSWORD, password_again: NEW_PASSWORD })).toMatchObject({
        status: 303,
      });
      expect((await postFrom(own, '/settings/tokens', '/logout')).status).toBe(303);

      // The thief's guesses now count against the account, like any stranger's: five of them block it…
      for (let i = 0; i < 5; i++) expect((await signIn(thief, bob.email, `guess ${i}`)).status).toBe(401);
      expect((await signIn(webClient(api), bob.email, NEW_PASSWORD)).status).toBe(429);
      // …the thief's browser with it, even with the right password…
      expect((await signIn(thief, bob.email, NEW_PASSWORD)).status).toBe(429);
      // …and not bob's browser, whose cookie was renewed with his change.
      expect(await signIn(own, bob.email, NEW_PASSWORD)).toMatchObject({ status: 303 });
    });

    it('the browser that sets a new password with a reset link is recognised; one that signed in before the reset is not', async () => {
      const bob = await createUser(api);
      const before = await signedInBefore(bob.email);
      expect((await askForReset(api, bob.email)).status).toBe(200);
      const resetting = webClient(api);
      expect(await resetWith(resetting, await latestLink(api, smtp, bob.email, '/password/reset'), NEW_PASSWORD)).toMatchObject({ status: 303, location: '/login?password=reset' });

      await attackerBlocks(bob.email, NEW_PASSWORD);
      expect((await signIn(before, bob.email, NEW_PASSWORD)).status).toBe(429);
      expect(await signIn(resetting, bob.email, NEW_PASSWORD)).toMatchObject({ status: 303 });
    });

    it('a cookie vouches for the one account it was issued to: not one made before cookies named it, nor the next account with the address', async () => {
      const key = await api.app.get(ServerSecrets).get('device-cookie');
      /** A browser holding a cookie sealed by the server with `content`. */
      const withCookie = (content: Record<string, unknown>) => {
        const web = webClient(api);
        web.agent.jar.setCookie(`prospect_device=${seal(key, 'device-cookie', 'device-cookie', content).toString('base64url')}; Path=/login`, '127.0.0.1', '/login');
        return web;
      };
      // As cookies were sealed before they named the account and its state: the address's hash and an id.
      const unchanged = await createUser(api);
      await attackerBlocks(unchanged.email);
      expect((await signIn(withCookie({ account: accountKey(unchanged.email), nonce: 'old' }), unchanged.email, PASSWORD)).status).toBe(429);

      // Someone signs up with an address, signs in (a cookie at epoch 0), deletes the account; its owner signs up later, at epoch 0 too.
      const squatter = await createUser(api);
      const squattersBrowser = await signInAs(api, squatter.email, PASSWORD);
      expect(await postFrom(squattersBrowser, '/settings/account', '/settings/account/delete', { password: PASSWORD })).toMatchObject({ status: 303 });
      const owner = await createUser(api, { email: squatter.email });
      await attackerBlocks(owner.email);
      expect((await signIn(squattersBrowser, owner.email, PASSWORD)).status).toBe(429);
    });

    it('the browser that resets the password of an account with a second factor is not recognised by the link alone', async () => {
      const bob = await createUser(api);
      await api.app.get(PasskeysRepository).insert(
        { userId: bob.id, credentialId: `cred-reset-${Date.now()}`, publicKey: Buffer.alloc(77), counter: 0, transports: [], name: 'Phone', createdAt: clock.now() },
        null,
      );
      expect((await askForReset(api, bob.email)).status).toBe(200);
      const resetting = webClient(api);
      expect((await resetWith(resetting, await latestLink(api, smtp, bob.email, '/password/reset'), NEW_PASSWORD)).status).toBe(303);
      await attackerBlocks(bob.email, NEW_PASSWORD);
      expect((await signIn(resetting, bob.email, NEW_PASSWORD)).status).toBe(429);
    });
  });

  describe('second-step codes', () => {
    /** Sets up the app in a signed-in browser; the key and the recovery codes. */
    async function enrol(web: WebClient): Promise<{ key: string; codes: string[] }> {
      const begun = await postFrom(web, '/settings/security', '/settings/security/totp');
      const key = /<code class="totp-key">([A-Z2-7 ]+)<\/code>/.exec(begun.text)![1]!;
      const done = await web.send('POST', '/settings/security/totp/confirm', { _csrf: web.csrfFrom(begun.text), code: codeFor(key, clock) });
      expect(done.status).toBe(200);
      const codes = [...done.text.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)].map((m) => m[1]!);
      expect(codes).toHaveLength(10);
      return { key, codes };
    }
    /** The password step in `web`, which must lead to the second step. */
    async function passwordStep(web: WebClient, email: string) {
      expect(await signIn(web, email, PASSWORD, { next: '/settings/tokens' })).toMatchObject({ status: 303, location: '/login/code' });
      return web;
    }
    const signOut = async (web: WebClient) => expect((await postFrom(web, '/settings/tokens', '/logout')).status).toBe(303);

    it('200 parallel wrong codes from 20 half-signed-in sessions check only 5; bob’s right code and recovery code from his recognised browser are accepted, and his code in sudo mode', async () => {
      const bob = await createUser(api);
      const browser = await signInAs(api, bob.email, PASSWORD); // bob's browser: it now holds a device cookie for his account
      const { key, codes } = await enrol(browser);
      await signOut(browser);
      clock.advanceSeconds(30); // past the step of the code that confirmed the app

      // Twenty browsers that know the password, half signed in; ten wrong codes each, all at once.
      const valid = new Set([-1, 0, 1].map((steps) => codeFor(key, clock, steps)));
      const wrongCodes = Array.from({ length: 200 }, (_, i) => String(100000 + i * 7)).filter((code) => !valid.has(code));
      const attackers: WebClient[] = [];
      // One after another: parallel password steps would share the account's 5 tries, right password or not.
      for (let i = 0; i < 20; i++) attackers.push(await passwordStep(webClient(api), bob.email));
      const forms = await Promise.all(attackers.map((web) => web.send('GET', '/login/code')));
      const answers = await Promise.all(
        wrongCodes.map((code, i) => attackers[i % 20]!.send('POST', '/login/code', { _csrf: attackers[i % 20]!.csrfFrom(forms[i % 20]!.text), code })),
      );
      // Counted before the code is checked: 5 reach it, and only those are audited as wrong codes.
      expect(answers.filter((r) => r.status === 401)).toHaveLength(5);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(wrongCodes.length - 5);
      expect(await events('web.login_failed', bob.id, 'wrong second-factor code')).toBe(5);
      // Any browser bob never signed in with is refused even the right code now (and told where to go)…
      const newcomer = await passwordStep(webClient(api), bob.email);
      const blocked = await postFrom(newcomer, '/login/code', '/login/code', { code: codeFor(key, clock) });
      expect(blocked.status).toBe(429);
      expect(blocked.text).toContain('sign in from a browser you have signed in with since the account last changed');

      // …but bob's browser, which signed in before, is not.
      await passwordStep(browser, bob.email);
      expect(await postFrom(browser, '/login/code', '/login/code', { code: codeFor(key, clock) })).toMatchObject({ status: 303, location: '/settings/tokens' });
      expect((await browser.send('GET', '/settings/tokens')).status).toBe(200);

      // His code in sudo mode, from his signed-in session (a later step: each is accepted once).
      clock.advanceSeconds(30);
      expect(await postFrom(browser, '/sudo?next=%2Fsettings%2Ftokens', '/sudo', { code: codeFor(key, clock), next: '/settings/tokens' })).toMatchObject({ status: 303, location: '/settings/tokens' });

      // A recovery code, from the same browser, while the attackers go on (still half signed in, still refused).
      await signOut(browser);
      const more = await Promise.all(attackers.map((web, i) => web.send('POST', '/login/code', { _csrf: web.csrfFrom(forms[i]!.text), code: '999999' })));
      expect(more.map((r) => r.status)).toEqual(Array(20).fill(429));
      await passwordStep(browser, bob.email);
      expect(await postFrom(browser, '/login/code', '/login/code', { code: codes[0]! })).toMatchObject({ status: 303, location: '/settings/tokens' });
      expect(await events('web.login_failed', bob.id, 'wrong second-factor code')).toBe(5);
      expect(await events('factor.recovery_code_used', bob.id)).toBe(1);
    });

    it('a recognised browser’s own wrong codes block only itself, 5 of 50 at once checked', async () => {
      const bob = await createUser(api);
      const browser = await signInAs(api, bob.email, PASSWORD);
      const { key } = await enrol(browser);
      await signOut(browser);
      clock.advanceSeconds(30);
      await passwordStep(browser, bob.email);
      const form = await browser.send('GET', '/login/code');
      const valid = new Set([-1, 0, 1].map((steps) => codeFor(key, clock, steps)));
      const wrongCodes = Array.from({ length: 50 }, (_, i) => String(200000 + i * 11)).filter((code) => !valid.has(code));
      const answers = await Promise.all(wrongCodes.map((code) => browser.send('POST', '/login/code', { _csrf: browser.csrfFrom(form.text), code })));
      expect(answers.filter((r) => r.status === 401)).toHaveLength(5);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(wrongCodes.length - 5);
      expect((await browser.send('POST', '/login/code', { _csrf: browser.csrfFrom(form.text), code: codeFor(key, clock) })).status).toBe(429);
      // Those were that browser's failures, not the account's: another browser that has the code gets in.
      const other = await passwordStep(webClient(api), bob.email);
      expect(await postFrom(other, '/login/code', '/login/code', { code: codeFor(key, clock) })).toMatchObject({ status: 303, location: '/settings/tokens' });
    });

    it('setting up an app is counted apart: guesses at the second step do not block bob’s first code', async () => {
      const bob = await createUser(api);
      const browser = await signInAs(api, bob.email, PASSWORD);
      // Bob has a passkey only, so a sign-in with his password asks for a second step.
      await api.app.get(PasskeysRepository).insert(
        { userId: bob.id, credentialId: `cred-${Date.now()}`, publicKey: Buffer.alloc(77), counter: 0, transports: [], name: 'Phone', createdAt: clock.now() },
        null,
      );
      const attacker = await passwordStep(webClient(api), bob.email);
      const form = await attacker.send('GET', '/login/code');
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => attacker.send('POST', '/login/code', { _csrf: attacker.csrfFrom(form.text), code: String(300000 + i) })));
      expect(answers.filter((r) => r.status === 401)).toHaveLength(5);
      expect(answers.filter((r) => r.status === 429)).toHaveLength(15);

      await enrol(browser);
      expect(await api.app.get(SecondFactorsService).hasTotp(bob.id)).toBe(true);
    });
  });
});
