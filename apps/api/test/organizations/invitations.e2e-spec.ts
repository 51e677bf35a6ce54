import { createHash } from 'node:crypto';
import { waitFor } from '../support/eventually.js';
import { Mailer } from '../../src/mail/mailer.js';
import { OrganizationsService } from '../../src/organizations/organizations.service.js';
import { ORG_INVITATION_RETENTION_DAYS, RetentionService } from '../../src/retention/retention.service.js';
import { INVITATIONS_PER_ORGANIZATION_PER_HOUR } from '../../src/rate-limits/rate-limits.js';
import { latestLink } from '../support/account-flows.js';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { FakeClock } from '../support/fake-clock.js';
import { authEvents, createUser, userByEmail, userById } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { startAppWithMail } from '../support/mailing-app.js';
import { addMember, createOrganization, personWithToken } from '../support/organization-fixtures.js';
import type { SmtpSink } from '../support/smtp-sink.js';
import type { TestApp } from '../support/test-app.js';
import { withClient } from '../support/test-database.js';
import { postFrom, signInAs, type WebClient, webClient } from '../support/web-client.js';

const PASSWORD = 'correct horse battery';

/**
 * Organization invitations (issue #44): made by admins through the API and the organization's
 * invitations page, mailed through the outbox (read here from a real SMTP server), accepted on
 * their link's page only by the verified owner of the invited address, single use, revocable,
 * expiring, and ending with the inviter's role or credentials.
 */
describe('organization invitations', () => {
  let api: TestApp;
  let smtp: SmtpSink;
  const clock = new FakeClock(Date.now());
  beforeAll(async () => ({ api, smtp } = await startAppWithMail({ clock })));
  afterAll(() => api?.close());

  const call = (method: string, path: string, token: string, json?: unknown) => request(api, method, path, { json, token });

  /** An organization with an owner, an admin and a member (each with an `orgs` token). */
  async function team() {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner);
    const admin = await personWithToken(api);
    const member = await personWithToken(api);
    await addMember(api, slug, owner.id, admin, 'admin');
    await addMember(api, slug, owner.id, member, 'member');
    return { slug, owner, admin, member };
  }

  /** Invites through the API; the 201's body. */
  async function invite(slug: string, by: { token: string }, email: string, role = 'member') {
    const res = await call('POST', `/api/orgs/${slug}/invitations`, by.token, { email, role });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
    return res.body as { id: string; email: string; role: string; expiresAt: string };
  }

  /** The token of the latest invitation link mailed to `email`. */
  const tokenMailedTo = async (email: string) => (await latestLink(api, smtp, email, '/invitations')).searchParams.get('token')!;
  const pageOf = (token: string) => `/invitations?token=${encodeURIComponent(token)}`;

  /** Presses Accept on the link's page in `web`; the form's answer. */
  const accept = (web: WebClient, token: string) => postFrom(web, pageOf(token), '/invitations', { token });

  const roleIn = async (slug: string, owner: { token: string }, userId: string) =>
    ((await call('GET', `/api/orgs/${slug}/members`, owner.token)).body as Array<{ user: { id: string }; role: string }>).find((m) => m.user.id === userId)?.role;

  it('invites by mail, and the invited address accepts on the page: a member with the role, recorded, the link used up', async () => {
    const { slug, owner, admin } = await team();
    const invited = await createUser(api);
    const created = await invite(slug, admin, ` ${invited.email.toUpperCase()} `, 'admin');
    expect(created).toEqual({ id: expect.any(String), email: invited.email, role: 'admin', expiresAt: expect.any(String) });
    expect(Date.parse(created.expiresAt) - clock.now().getTime()).toBe(7 * 86_400_000);
    expect((await call('GET', `/api/orgs/${slug}/invitations`, admin.token)).body).toEqual([created]);

    await api.app.get(Mailer).settled();
    const [mail] = smtp.to(invited.email);
    expect(mail!.subject).toBe('You are invited to join Acme Sales on Prospect');
    const token = await tokenMailedTo(invited.email);
    expect(token).toMatch(/^prso_/);
    // sql-on-purpose: what is stored at rest is the link's SHA-256, never the token.
    const [stored] = await api.dataSource.query(`SELECT token_hash, inviter_epoch FROM organization_invitations WHERE id = $1`, [created.id]);
    expect(Buffer.from(stored.token_hash).equals(createHash('sha256').update(token).digest())).toBe(true);

    const web = await signInAs(api, invited.email, PASSWORD);
    const page = await web.send('GET', pageOf(token));
    expect(page.status).toBe(200);
    expect(page.text).toContain('Acme Sales');
    expect(page.text).toContain('<strong>an admin</strong>');
    expect(page.text).toContain('Accept and join Acme Sales');
    expect(await roleIn(slug, owner, invited.id)).toBeUndefined(); // opening the page (as a mail scanner does) changes nothing

    const accepted = await accept(web, token);
    expect(accepted).toMatchObject({ status: 303, location: `/orgs/${slug}` });
    expect(await roleIn(slug, owner, invited.id)).toBe('admin');
    expect(await authEvents(api, { type: 'org.invitation_accept', userId: invited.id })).toHaveLength(1);
    expect(await authEvents(api, { type: 'org.member_add', userId: invited.id })).toHaveLength(1);
    expect(await authEvents(api, { type: 'org.invitation_create', userId: admin.id })).toHaveLength(1);
    expect((await call('GET', `/api/orgs/${slug}/invitations`, admin.token)).body).toEqual([]);

    const again = await accept(web, token);
    expect(again.status).toBe(410);
    expect(again.text).toContain('This invitation was already accepted');
    expect((await web.send('GET', pageOf(token))).status).toBe(410);
    expect((await web.send('GET', pageOf('prso_not-a-real-one'))).status).toBe(404);
    expect((await web.send('GET', '/invitations')).status).toBe(404);
  });

  it('refuses another signed-in person, saying which address it was sent to; the invited one can still accept', async () => {
    const { slug, owner } = await team();
    const invited = await createUser(api);
    const other = await createUser(api);
    await invite(slug, owner, invited.email);
    const token = await tokenMailedTo(invited.email);

    const web = await signInAs(api, other.email, PASSWORD);
    const page = await web.send('GET', pageOf(token));
    expect(page.status).toBe(403);
    expect(page.text).toContain(`This invitation was sent to <strong>${invited.email}</strong>, and you are signed in as <strong>${other.email}</strong>`);
    expect(page.text).not.toContain('Accept and join');
    const refused = await web.send('POST', '/invitations', { _csrf: web.csrfFrom(page.text), token });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain(`sent to <strong>${invited.email}</strong>`);
    expect(await roleIn(slug, owner, other.id)).toBeUndefined();

    expect((await accept(await signInAs(api, invited.email, PASSWORD), token)).status).toBe(303);
    expect(await roleIn(slug, owner, invited.id)).toBe('member');
  });

  it('refuses the invited person once they changed their address, and an unverified holder of the address', async () => {
    const { slug, owner } = await team();
    const invited = await createUser(api);
    await invite(slug, owner, invited.email);
    const token = await tokenMailedTo(invited.email);

    // They move to another address through the real flow (the link mailed to the new one).
    const web = await signInAs(api, invited.email, PASSWORD);
    const moved = `moved-${Date.now()}@example.com`;
    expect((await postFrom(web, '/settings/account', '/settings/account/email', { email: moved, password: PASSWORD })).status).toBe(200);
    const link = await latestLink(api, smtp, moved, '/email-change');
    const opened = await web.send('GET', link.pathname + link.search);
    expect((await web.send('POST', '/email-change', { _csrf: web.csrfFrom(opened.text), token: link.searchParams.get('token')! })).status).toBe(303); // back to the account page
    expect((await userById(api, invited.id))!.email).toBe(moved);

    const again = await signInAs(api, moved, PASSWORD);
    const refused = await accept(again, token);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain(`This invitation was sent to <strong>${invited.email}</strong>`);
    expect(await roleIn(slug, owner, invited.id)).toBeUndefined();

    // Someone who signs up with the freed address and has not proven it is refused too.
    const squatter = await createUser(api, { email: invited.email, emailVerified: false });
    const squatting = await signInAs(api, invited.email, PASSWORD);
    const unverified = await accept(squatting, token);
    expect(unverified.status).toBe(403);
    expect(unverified.text).toContain('you have not confirmed it yet');
    expect(await roleIn(slug, owner, squatter.id)).toBeUndefined();
  });

  it('an address change committing while an accept runs: the accept waits for it (the account row is share-locked) and refuses the new address', async () => {
    const { slug, owner } = await team();
    const invited = await createUser(api);
    await invite(slug, owner, invited.email);
    const token = await tokenMailedTo(invited.email);
    const web = await signInAs(api, invited.email, PASSWORD);
    const page = await web.send('GET', pageOf(token));
    // sql-on-purpose: an address change held open in a transaction of its own, so the accept runs while it is not yet committed.
    const change = api.dataSource.createQueryRunner();
    await change.connect();
    await change.startTransaction();
    try {
      const moved = `moved-${Date.now()}@example.com`;
      // sql-on-purpose: the row write of an address change (UsersService.setEmailFromLink), uncommitted.
      await change.query(`UPDATE users SET email = $2 WHERE id = $1`, [invited.id, moved]);
      const accepting = web.send('POST', '/invitations', { _csrf: web.csrfFrom(page.text), token });
      // sql-on-purpose: the accept is waiting for the account row's lock (what an unlocked read would never do).
      const waiting = async () => (await api.dataSource.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n > 0;
      await waitFor('the accept to wait for the account row', waiting);
      await change.commitTransaction();
      const refused = await accepting;
      expect(refused.status).toBe(403);
      expect(refused.text).toContain(`This invitation was sent to <strong>${invited.email}</strong>`);
      expect(await roleIn(slug, owner, invited.id)).toBeUndefined();
    } finally {
      if (change.isTransactionActive) await change.rollbackTransaction();
      await change.release();
    }
  });

  it('a revoked invitation, and one replaced by inviting the address again, no longer work', async () => {
    const { slug, admin, owner } = await team();
    const invited = await createUser(api);
    const first = await invite(slug, admin, invited.email);
    const firstToken = await tokenMailedTo(invited.email);
    const second = await invite(slug, admin, invited.email, 'admin');
    const secondToken = await tokenMailedTo(invited.email);
    expect(secondToken).not.toBe(firstToken);
    expect((await call('GET', `/api/orgs/${slug}/invitations`, admin.token)).body).toEqual([second]);

    const web = await signInAs(api, invited.email, PASSWORD);
    const replaced = await web.send('GET', pageOf(firstToken));
    expect(replaced.status).toBe(410);
    expect(replaced.text).toContain('This invitation was withdrawn');

    expect((await call('DELETE', `/api/orgs/${slug}/invitations/${first.id}`, admin.token)).status).toBe(404); // no longer open
    expect((await call('DELETE', `/api/orgs/${slug}/invitations/not-a-uuid`, admin.token)).status).toBe(400);
    const page = await web.send('GET', pageOf(secondToken));
    expect(page.status).toBe(200);
    expect((await call('DELETE', `/api/orgs/${slug}/invitations/${second.id}`, admin.token)).status).toBe(204);
    const revoked = await web.send('POST', '/invitations', { _csrf: web.csrfFrom(page.text), token: secondToken });
    expect(revoked.status).toBe(410);
    expect(revoked.text).toContain('This invitation was withdrawn');
    expect(await roleIn(slug, owner, invited.id)).toBeUndefined();
    expect(await authEvents(api, { type: 'org.invitation_revoke', userId: admin.id })).toHaveLength(1);
  });

  it('two accepts at once: exactly one joins, the other is told the link is used', async () => {
    const { slug, owner } = await team();
    const invited = await createUser(api);
    await invite(slug, owner, invited.email, 'admin');
    const token = await tokenMailedTo(invited.email);
    const [one, two] = [await signInAs(api, invited.email, PASSWORD), await signInAs(api, invited.email, PASSWORD)];
    const [pageOne, pageTwo] = [await one.send('GET', pageOf(token)), await two.send('GET', pageOf(token))];
    const answers = await Promise.all([
      one.send('POST', '/invitations', { _csrf: one.csrfFrom(pageOne.text), token }),
      two.send('POST', '/invitations', { _csrf: two.csrfFrom(pageTwo.text), token }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([303, 410]);
    expect(answers.find((a) => a.status === 410)!.text).toContain('already accepted');
    expect(await roleIn(slug, owner, invited.id)).toBe('admin');
    expect(await authEvents(api, { type: 'org.invitation_accept', userId: invited.id })).toHaveLength(1);
  });

  it('roles: an admin may not invite an owner (403 naming it), a member may not invite (403), an outsider gets 404; an owner invites an owner', async () => {
    const { slug, owner, admin, member } = await team();
    const outsider = await personWithToken(api);
    const email = `owner-to-be-${Date.now()}@example.com`;
    const ownerByAdmin = await call('POST', `/api/orgs/${slug}/invitations`, admin.token, { email, role: 'owner' });
    expect(ownerByAdmin.status).toBe(403);
    expect(ownerByAdmin.body.message).toMatch(/Only an owner of “Acme Sales” may invite an owner; you are an admin/);
    const byMember = await call('POST', `/api/orgs/${slug}/invitations`, member.token, { email, role: 'member' });
    expect(byMember.status).toBe(403);
    expect(byMember.body.message).toMatch(/Only an admin or an owner/);
    expect((await call('GET', `/api/orgs/${slug}/invitations`, member.token)).status).toBe(403);
    expect((await call('POST', `/api/orgs/${slug}/invitations`, outsider.token, { email, role: 'member' })).status).toBe(404);
    for (const body of [{ email: 'not an address', role: 'member' }, { email, role: 'boss' }, { email }, { email, role: 'member', extra: 1 }]) {
      expect({ body, status: (await call('POST', `/api/orgs/${slug}/invitations`, owner.token, body)).status }).toEqual({ body, status: 400 });
    }
    await api.app.get(Mailer).settled();
    expect(smtp.to(email)).toHaveLength(0);
    expect((await invite(slug, owner, email, 'owner')).role).toBe('owner');
  });

  it('ends when the inviter is no longer an admin, or an owner for an owner’s invitation, or changed their password', async () => {
    const { slug, owner, admin } = await team();
    const [a, b, c] = [await createUser(api), await createUser(api), await createUser(api)];
    const secondOwner = await personWithToken(api);
    await addMember(api, slug, owner.id, secondOwner, 'owner');
    await invite(slug, admin, a.email);
    await invite(slug, secondOwner, b.email, 'owner');
    await invite(slug, owner, c.email);
    const [tokenA, tokenB, tokenC] = [await tokenMailedTo(a.email), await tokenMailedTo(b.email), await tokenMailedTo(c.email)];

    expect((await call('PATCH', `/api/orgs/${slug}/members/${admin.id}`, owner.token, { role: 'member' })).status).toBe(204);
    expect((await call('PATCH', `/api/orgs/${slug}/members/${secondOwner.id}`, owner.token, { role: 'admin' })).status).toBe(204);
    const ownerWeb = await signInAs(api, owner.email, PASSWORD);
    const changed = await postFrom(ownerWeb, '/settings/account', '/settings/account/password', { current_password: PASSWORD, password: 'a brand new passphrase', password_again: 'a brand new passphrase' });
    expect(changed.status).toBe(303);

    for (const [person, token] of [[a, tokenA], [b, tokenB], [c, tokenC]] as const) {
      const answer = await accept(await signInAs(api, person.email, PASSWORD), token);
      expect(answer.status).toBe(410);
      expect(answer.text).toContain('Whoever sent it is no longer allowed to invite you');
      expect(await roleIn(slug, secondOwner, person.id)).toBeUndefined();
    }
  });

  it('a signed-out person signs in and comes back, or creates the account from the link: verified, joined, signed in', async () => {
    const { slug, owner } = await team();
    const existing = await createUser(api);
    await invite(slug, owner, existing.email);
    const existingToken = await tokenMailedTo(existing.email);
    const browser = webClient(api);
    const signedOut = await browser.send('GET', pageOf(existingToken));
    expect(signedOut.status).toBe(200);
    const next = encodeURIComponent(pageOf(existingToken));
    expect(signedOut.text).toContain(`href="/login?next=${next}"`);
    expect((await browser.send('POST', '/invitations', { _csrf: browser.csrfFrom(signedOut.text), token: existingToken })).location).toBe(`/login?next=${next}`);
    const signedIn = await postFrom(browser, `/login?next=${next}`, '/login', { email: existing.email, password: PASSWORD, next: pageOf(existingToken) });
    expect(signedIn).toMatchObject({ status: 303, location: pageOf(existingToken) });
    expect((await accept(browser, existingToken)).status).toBe(303);
    expect(await roleIn(slug, owner, existing.id)).toBe('member');

    const newcomer = `newcomer-${Date.now()}@example.com`;
    await invite(slug, owner, newcomer, 'admin');
    const token = await tokenMailedTo(newcomer);
    const fresh = webClient(api);
    const page = await fresh.send('GET', pageOf(token));
    expect(page.text).toContain('Create account and join');
    expect(page.text).toContain(`value="${newcomer}"`);
    const short = await fresh.send('POST', '/invitations/signup', { _csrf: fresh.csrfFrom(page.text), token, name: 'Nia Newcomer', password: 'short' });
    expect(short.status).toBe(400);
    expect(await userByEmail(api, newcomer)).toBeNull();
    const joined = await fresh.send('POST', '/invitations/signup', { _csrf: fresh.csrfFrom(page.text), token, name: 'Nia Newcomer', password: PASSWORD });
    expect(joined).toMatchObject({ status: 303, location: `/orgs/${slug}` });
    const user = (await userByEmail(api, newcomer))!;
    expect(user.emailVerifiedAt).not.toBeNull();
    expect(await roleIn(slug, owner, user.id)).toBe('admin');
    expect((await fresh.send('GET', '/settings/tokens')).status).toBe(200); // signed in
    expect(await authEvents(api, { type: 'web.signup', userId: user.id })).toHaveLength(1);

    // The used link makes no second account, and an address with an account signs in instead.
    const again = await webClient(api).send('GET', pageOf(token));
    expect(again.status).toBe(410);
    await invite(slug, owner, `x${existing.email}`);
    const taken = await createUser(api, { email: `y${existing.email}` });
    await invite(slug, owner, taken.email);
    const takenToken = await tokenMailedTo(taken.email);
    const other = webClient(api);
    const takenPage = await other.send('GET', pageOf(takenToken));
    const refused = await other.send('POST', '/invitations/signup', { _csrf: other.csrfFrom(takenPage.text), token: takenToken, name: 'Someone', password: PASSWORD });
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('has an account already: sign in to accept');

    // Closed sign-up: accounts come from the instance's administrators only, whatever an organization's admin invites.
    Object.assign(api.config, { allowSignup: false });
    try {
      const closedEmail = `closed-${Date.now()}@example.com`;
      await invite(slug, owner, closedEmail);
      const closedToken = await tokenMailedTo(closedEmail);
      const closed = webClient(api);
      const closedPage = await closed.send('GET', pageOf(closedToken));
      expect(closedPage.text).toContain('Sign-up is closed on this Prospect');
      expect(closedPage.text).not.toContain('Create account and join');
      const tried = await closed.send('POST', '/invitations/signup', { _csrf: closed.csrfFrom(closedPage.text), token: closedToken, name: 'Closed Out', password: PASSWORD });
      expect(tried.status).toBe(403);
      expect(await userByEmail(api, closedEmail)).toBeNull();
    } finally {
      Object.assign(api.config, { allowSignup: true });
    }
  });

  it('the organization’s invitations page: admins list, invite and revoke; a member gets 403, an outsider 404', async () => {
    const { slug, admin, member, owner } = await team();
    const outsider = await createUser(api);
    const path = `/orgs/${slug}/invitations`;
    const web = await signInAs(api, admin.email, PASSWORD);
    const page = await web.send('GET', path);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`href="/orgs/${slug}"`);
    expect(page.text).toContain('No open invitations.');
    expect(page.text).not.toContain('<option value="owner"'); // an admin may not name owners
    const email = `via-page-${Date.now()}@example.com`;
    const invited = await postFrom(web, path, path, { email, role: 'admin' });
    expect(invited).toMatchObject({ status: 303, location: `${path}?invited=${encodeURIComponent(email)}` });
    const listed = await web.send('GET', invited.location!);
    expect(listed.text).toContain(`Invited ${email}`);
    expect(listed.text).toContain(`Revoke the invitation of ${email}`);
    await tokenMailedTo(email);
    const ownerRefused = await postFrom(web, path, path, { email: `o-${email}`, role: 'owner' });
    expect(ownerRefused.status).toBe(403);
    expect(ownerRefused.text).toContain('may invite an owner');
    expect((await postFrom(web, path, path, { email: 'nope', role: 'member' })).status).toBe(400);

    const [open] = (await call('GET', `/api/orgs/${slug}/invitations`, owner.token)).body as Array<{ id: string }>;
    const revoked = await postFrom(web, path, `${path}/${open!.id}/revoke`, {});
    expect(revoked).toMatchObject({ status: 303, location: `${path}?revoked=1` });
    expect((await call('GET', `/api/orgs/${slug}/invitations`, owner.token)).body).toEqual([]);
    expect((await web.send('POST', path, { email, role: 'member' })).status).toBe(403); // no CSRF token

    expect((await (await signInAs(api, member.email, PASSWORD)).send('GET', path)).status).toBe(403);
    expect((await (await signInAs(api, outsider.email, PASSWORD)).send('GET', path)).status).toBe(404);
    expect((await webClient(api).send('GET', path)).location).toBe(`/login?next=${encodeURIComponent(path)}`);
  });

  it(`counts invitations per organization: ${INVITATIONS_PER_ORGANIZATION_PER_HOUR} an hour, then 429`, async () => {
    const { slug, owner } = await team();
    for (let i = 0; i < INVITATIONS_PER_ORGANIZATION_PER_HOUR; i++) await invite(slug, owner, `bulk-${i}-${Date.now()}@example.com`);
    const over = await call('POST', `/api/orgs/${slug}/invitations`, owner.token, { email: `bulk-over-${Date.now()}@example.com`, role: 'member' });
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBeTruthy();
    const other = await team(); // another organization is not held back
    await invite(other.slug, other.owner, `bulk-other-${Date.now()}@example.com`);
  });

  it('in Chromium: an admin invites on the invitations page, and the invited person creates the account and joins with the keyboard', async () => {
    const { slug, owner, admin } = await team();
    const browser = await launchBrowser();
    try {
      const adminPage = await browser.newPage();
      await adminPage.goto(`${api.baseUrl}/orgs/${slug}/invitations`);
      await adminPage.getByLabel('E-mail').fill(admin.email);
      await adminPage.getByLabel('Password').fill(PASSWORD);
      await Promise.all([adminPage.waitForURL((url) => url.pathname.endsWith('/invitations')), adminPage.getByRole('button', { name: 'Sign in', exact: true }).click()]);
      const email = `chromium-${Date.now()}@example.com`;
      await adminPage.getByLabel('E-mail address').fill(email);
      await adminPage.getByLabel('Role').selectOption('admin');
      await Promise.all([adminPage.waitForURL((url) => url.searchParams.has('invited')), adminPage.getByRole('button', { name: 'Invite', exact: true }).click()]);
      await adminPage.getByText(`Invited ${email}`).waitFor();
      await adminPage.screenshot({ path: `${SCREENSHOTS}org-invitations.png`, fullPage: true });

      const link = await latestLink(api, smtp, email, '/invitations');
      const page = await browser.newPage();
      await page.goto(link.toString());
      await page.getByRole('heading', { name: 'Join Acme Sales' }).waitFor();
      await page.screenshot({ path: `${SCREENSHOTS}org-invitation-signed-out.png`, fullPage: true });
      await page.getByLabel('Name').focus();
      await page.keyboard.type('Kim Keyboard');
      await page.keyboard.press('Tab');
      await page.keyboard.type(PASSWORD);
      await Promise.all([page.waitForURL((url) => url.pathname === `/orgs/${slug}`), page.keyboard.press('Enter')]);
      const user = (await userByEmail(api, email))!;
      expect(user.emailVerifiedAt).not.toBeNull();
      expect(await roleIn(slug, owner, user.id)).toBe('admin');
    } finally {
      await browser.close();
    }
  });

  // Last: it moves the shared clock on.
  it('an expired invitation says so, and never works', async () => {
    const { slug, owner } = await team();
    const invited = await createUser(api);
    await invite(slug, owner, invited.email);
    const token = await tokenMailedTo(invited.email);
    clock.advanceSeconds(7 * 86_400 + 1);
    const web = await signInAs(api, invited.email, PASSWORD);
    const page = await web.send('GET', pageOf(token));
    expect(page.status).toBe(410);
    expect(page.text).toContain('This invitation has expired');
    const refused = await web.send('POST', '/invitations', { _csrf: web.csrfFrom((await web.send('GET', '/settings/account')).text), token });
    expect(refused.status).toBe(410);
    expect(await roleIn(slug, owner, invited.id)).toBeUndefined();
    expect((await call('GET', `/api/orgs/${slug}/invitations`, owner.token)).body).toEqual([]);
  });

  it('the retention job finds ended invitations through their index, not by reading every live one', async () => {
    const { slug, owner } = await team();
    const scans = () =>
      withClient(api.database.url, async (db) =>
        // sql-on-purpose: the server's own count of the index's scans is what says the purge used it
        Number((await db.query(`SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'organization_invitations_ended'`)).rows[0]?.idx_scan ?? -1),
      );
    // Many invitations still live (the common case the purge skips), planned with real statistics.
    await withClient(api.database.url, async (db) => {
      // sql-on-purpose: twenty thousand rows in one statement, past the per-organization invitation limit the API counts
      await db.query(
        `INSERT INTO organization_invitations (organization_id, email, role, token_hash, inviter_epoch, created_at, expires_at)
         SELECT o.id, 'live' || g || '@example.com', 'member', sha256(('live' || g || o.id)::bytea), 0, $1, $1::timestamptz + interval '10 years'
           FROM organizations o, generate_series(1, 20000) g WHERE o.slug = $2`,
        [clock.now(), slug],
      );
      // sql-on-purpose: the planner's statistics, as autovacuum would gather them later
      await db.query('ANALYZE organization_invitations');
    });
    const before = await scans();
    expect(before).toBeGreaterThanOrEqual(0);
    await api.app.get(RetentionService).purge();
    // The server's statistics reach other sessions when the purging backend reports them (within ~10 s on Postgres 15).
    await waitFor('the purge to scan organization_invitations_ended', async () => (await scans()) > before, 15_000);
    expect((await call('GET', `/api/orgs/${slug}/invitations`, owner.token)).status).toBe(200);
  });

  // Last too: it moves the shared clock on.
  it(`the retention job deletes invitations ended more than ${ORG_INVITATION_RETENTION_DAYS} days ago: their links then say they do not exist`, async () => {
    const { slug, owner } = await team();
    const [a, b, c] = [await createUser(api), await createUser(api), await createUser(api)];
    await invite(slug, owner, a.email);
    const accepted = await tokenMailedTo(a.email);
    expect((await accept(await signInAs(api, a.email, PASSWORD), accepted)).status).toBe(303);
    const withdrawn = await invite(slug, owner, b.email);
    const revoked = await tokenMailedTo(b.email);
    expect((await call('DELETE', `/api/orgs/${slug}/invitations/${withdrawn.id}`, owner.token)).status).toBe(204);
    await invite(slug, owner, c.email);
    const expiring = await tokenMailedTo(c.email);
    const anyone = webClient(api);
    const purge = () => api.app.get(RetentionService).purge();

    clock.advanceSeconds((ORG_INVITATION_RETENTION_DAYS + 1) * 86_400);
    await purge();
    expect((await anyone.send('GET', pageOf(accepted))).status).toBe(404);
    expect((await anyone.send('GET', pageOf(revoked))).status).toBe(404);
    // Expired only 24 days ago: its page still says why.
    const expired = await anyone.send('GET', pageOf(expiring));
    expect(expired.status).toBe(410);
    expect(expired.text).toContain('This invitation has expired');

    clock.advanceSeconds(7 * 86_400);
    await purge();
    expect((await anyone.send('GET', pageOf(expiring))).status).toBe(404);
    // The membership it made stays.
    expect(await api.app.get(OrganizationsService).listFor(a.id, null)).toEqual([expect.objectContaining({ slug })]);
  });
});
