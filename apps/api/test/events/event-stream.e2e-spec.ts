import { type EventPage, EventPageSchema, EventSchema, OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { AuditService } from '../../src/audit/audit.service.js';
import { UnitOfWork } from '../../src/database/unit-of-work.js';
import { positionOf } from '../../src/events/event-id.js';
import { approve, createUser, poll, startDeviceLogin, userByEmail } from '../support/fixtures.js';
import { enrolTotp } from '../support/account-flows.js';
import { csrfFrom, postFrom, signUp, webClient } from '../support/web-client.js';
import { approveIn, authorizationParams, pkce, tokenRequest } from '../oauth/code-flow-support.js';
import { DeviceApprovalService } from '../../src/device-login/device-approval.service.js';
import { post, request, type Target } from '../support/http.js';
import { addMember, createOrganization, orgsToken, personWithToken } from '../support/organization-fixtures.js';
import { waitFor } from '../support/eventually.js';
import { scaledTimeout } from '../support/process-cleanup.js';
import { startReplica, startTestApp, UNLIMITED_ADDRESS, type Replica, type TestApp } from '../support/test-app.js';

const ADMIN_EVENTS = '/api/admin/events';
const STREAM_START_ID = 'evt_00000000000000000000000000';
const PASSWORD = 'correct horse battery';

/** The event stream (issue #46): the cursor never skips or repeats an event while replicas write. */
describe('the event stream', () => {
  let api: TestApp;
  let replica: Replica;
  let adminToken: string;
  beforeAll(async () => {
    api = await startTestApp();
    replica = await startReplica(api, undefined, UNLIMITED_ADDRESS);
    const admin = await createUser(api, { role: 'admin' });
    const login = await startDeviceLogin(api, { clientName: 'prospect CLI 0.1.0', hostname: 'laptop', scopes: ['profile', 'tokens', 'admin'] });
    await approve(api, login.userCode, admin);
    adminToken = (await poll(api, login.deviceCode)).body.accessToken;
  });
  afterAll(async () => {
    await replica?.close();
    await api?.close();
  });

  const page = async (target: Target, path: string, query: Record<string, string | number>, token = adminToken) => {
    const res = await request(target, 'GET', `${path}?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))}`, { token });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return EventPageSchema.parse(res.body) as EventPage;
  };

  /**
   * A page once it holds at least `count` events: an event shows once every transaction older than
   * its writer has ended, and that is any transaction on the Postgres server, of other databases
   * (other test files) too, so one just written may take a moment to show.
   */
  async function settledPage(path: string, query: Record<string, string | number>, token: string, count: number) {
    let answer = await page(api, path, query, token);
    await waitFor(`${count} events at ${path}`, async () => (answer = await page(api, path, query, token)).events.length >= count, 30_000);
    return answer;
  }

  /** Every event from `after` to where the stream is settled now, page by page. */
  async function readAll(after = ''): Promise<string[]> {
    const ids: string[] = [];
    for (;;) {
      const { events, next } = await page(api, ADMIN_EVENTS, { after, limit: 1000 });
      ids.push(...events.map((e) => e.id));
      if (!events.length) return ids;
      after = next;
    }
  }

  it('pages through thousands of events written concurrently by two replicas, each id once and in order', async () => {
    const start = (await readAll()).at(-1) ?? STREAM_START_ID;
    const PER_WORKER = 150;
    const WORKERS = 5; // per replica
    let written = 0;
    let writing = true;
    let writersDoneAt = Infinity;
    const writer = async (target: Target) => {
      for (let i = 0; i < PER_WORKER; i++) {
        const res = await post(target, ROUTES.deviceStart, { clientName: 'prospect CLI 0.1.0', hostname: `writer-${i}` });
        if (res.status !== 200) throw new Error(`device start: ${res.status} ${JSON.stringify(res.body)}`);
        written++;
      }
    };
    // A transaction that writes its event early and commits late, while the replicas commit
    // hundreds after it: an id-ordered cursor would pass its event before it commits.
    let heldRowId = 0n;
    const held = api.app.get(UnitOfWork).run(async (tx) => {
      await api.app.get(AuditService).record('admin.api_action', { detail: { action: 'held open by the test' } }, tx);
      const before = written;
      await waitFor('the replicas to commit events after the held one', () => written >= before + 300, 20_000);
    });

    const total = 2 * WORKERS * PER_WORKER;
    // The reader pages along with page sizes that vary, alternating between the replicas, until it
    // has met every event written. (An empty page alone does not say that: a transaction anywhere
    // on the server, of another database too, holds back the stream until it ends.)
    const seen: string[] = [];
    const seenEvents: Array<{ id: string; type: string; data: Record<string, unknown> }> = [];
    const reader = (async () => {
      let after = start;
      for (let n = 0; ; n++) {
        const target = n % 2 ? replica.target : api;
        const { events, next } = await page(target, ADMIN_EVENTS, { after, limit: 1 + ((n * 37) % 250) });
        seen.push(...events.map((e) => e.id));
        seenEvents.push(...events);
        if (!events.length) expect(next).toBe(after);
        after = next;
        if (!writing && seenEvents.filter((e) => e.type === 'device_authorization.started').length >= total && seenEvents.some((e) => e.type === 'admin.action')) return;
        // Bounded: a cursor that skipped events never meets them; the checks below then say what is missing.
        if (!writing && Date.now() > writersDoneAt + scaledTimeout(10_000)) return;
        if (!events.length) {
          await new Promise((r) => setTimeout(r, 5)); // polling, as a client does; nothing waits on it
        }
      }
    })();
    await Promise.all([held, ...[api, replica.target].flatMap((t) => Array.from({ length: WORKERS }, () => writer(t)))]);
    writersDoneAt = Date.now();
    writing = false;
    await reader;

    expect(written).toBe(total);
    const everything = await readAll(start);
    expect(everything.filter((id) => !seen.includes(id))).toEqual([]);
    expect(seen).toEqual(everything);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual(seen);
    expect(seen.length).toBeGreaterThanOrEqual(total + 1);

    // The held event is there once, after the hundreds of events that committed before it but were
    // written after it (higher row ids): the stream waited for it instead of passing it.
    const heldEvents = seenEvents.filter((e) => e.type === 'admin.action' && e.data.action === 'held open by the test');
    expect(heldEvents).toHaveLength(1);
    const heldAt = seen.indexOf(heldEvents[0]!.id);
    heldRowId = positionOf(heldEvents[0]!.id)!.id;
    const writtenLater = seenEvents.filter((e) => e.type === 'device_authorization.started' && positionOf(e.id)!.id > heldRowId);
    expect(writtenLater.length).toBeGreaterThanOrEqual(300);
    expect(writtenLater.every((e) => seen.indexOf(e.id) > heldAt)).toBe(true);
  }, 60_000);

  it('shows an organization’s events to its admins, as documented objects', async () => {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner);
    const member = await personWithToken(api);
    await addMember(api, slug, owner.id, member, 'member');
    const renamed = await request(api, 'PATCH', `/api/orgs/${slug}`, { json: { name: 'Acme Renamed' }, token: owner.token, headers: { 'user-agent': 'events-test/1.0' } });
    expect(renamed.status).toBe(200);

    const { events, next } = await settledPage(`/api/orgs/${slug}/events`, {}, owner.token, 3);
    expect(events.map((e) => e.type)).toEqual(['organization.created', 'member.added', 'organization.renamed']);
    for (const event of events) EventSchema.parse(event);
    const rename = events.at(-1)!;
    expect(rename).toMatchObject({
      actor: { type: 'user', id: owner.id, email: owner.email },
      subject: { type: 'organization' },
      organization: { slug, name: 'Acme Renamed' },
      userAgent: 'events-test/1.0',
      data: { name: 'Acme Renamed' },
    });
    expect(next).toBe(rename.id);
    expect(events.find((e) => e.type === 'member.added' && e.subject?.id === member.id)).toBeDefined();

    // Nothing new: the same cursor back; a type filter.
    expect(await page(api, `/api/orgs/${slug}/events`, { after: next }, owner.token)).toEqual({ events: [], next });
    expect((await page(api, `/api/orgs/${slug}/events`, { types: 'member.added,organization.renamed' }, owner.token)).events.map((e) => e.type)).toEqual(['member.added', 'organization.renamed']);
    // Another organization's events are not in it.
    const other = await personWithToken(api);
    await createOrganization(api, other);
    await settledPage(ADMIN_EVENTS, { after: next, types: 'organization.created' }, adminToken, 1);
    expect((await page(api, `/api/orgs/${slug}/events`, { after: next }, owner.token)).events).toEqual([]);

    // A member is refused with the role named; a stranger finds nothing; a token without `orgs` is refused.
    const asMember = await request(api, 'GET', `/api/orgs/${slug}/events`, { token: member.token });
    expect(asMember.status).toBe(403);
    expect(asMember.body.message).toMatch(/admin or an owner .* may read its events/);
    expect((await request(api, 'GET', `/api/orgs/${slug}/events`, { token: other.token })).status).toBe(404);
    expect((await request(api, 'GET', `/api/orgs/${slug}/events`, { token: await orgsToken(api, owner.id, ['profile']) })).status).toBe(403);
  });

  it('records the caller’s User-Agent on sign-in, sign-out, token creation, device start and device approval', async () => {
    const UA = 'Mozilla/5.0 (X11; Linux x86_64) events-test/1.0';
    // From the end of the stream now: the other tests' thousands of events come before.
    const from = (await readAll()).at(-1) ?? STREAM_START_ID;
    const person = await createUser(api);
    const web = webClient(api);
    const loginPage = await web.send('GET', '/login');
    expect((await web.send('POST', '/login', { _csrf: csrfFrom(loginPage.text), email: person.email, password: 'correct horse battery' }, { 'user-agent': UA })).status).toBe(303);
    const token = await orgsToken(api, person.id, ['profile', 'tokens']);
    expect((await request(api, 'POST', ROUTES.issueToken, { json: { label: 'ci' }, token, headers: { 'user-agent': UA } })).status).toBe(201);
    const clientName = `ua-test ${person.id}`;
    const started = await request(api, 'POST', ROUTES.deviceStart, { json: { clientName, hostname: 'laptop' }, headers: { 'user-agent': 'prospect/0.1.0 (linux; node 20)' } });
    expect(started.status).toBe(200);
    const login = started.body as { userCode: string };
    const approver = { userId: person.id, ip: '127.0.0.1', userAgent: UA, credentialEpoch: person.credentialEpoch ?? 0, amr: ['pwd'], secondFactor: false };
    await api.app.get(DeviceApprovalService).decideFor(approver, login.userCode, 'approve');
    const account = await web.send('GET', '/settings/tokens');
    expect((await web.send('POST', '/logout', { _csrf: csrfFrom(account.text) }, { 'user-agent': UA })).status).toBe(303);

    const types = ['user.signed_in', 'token.created', 'grant.approved', 'user.signed_out'];
    let events: EventPage['events'] = [];
    await waitFor(
      'the events to settle',
      async () => (events = (await page(api, ADMIN_EVENTS, { after: from, types: types.join(','), limit: 1000 })).events.filter((e) => e.actor.id === person.id)).length >= 5,
      30_000,
    );
    // The token made by the fixture (through the service, no request) has none; the one made over HTTP has it.
    expect(events.map((e) => [e.type, e.userAgent])).toEqual([
      ['user.signed_in', UA],
      ['token.created', null],
      ['token.created', UA],
      ['grant.approved', UA],
      ['user.signed_out', UA],
    ]);
    let starts: EventPage['events'] = [];
    await waitFor(
      'the device start to settle',
      async () => (starts = (await page(api, ADMIN_EVENTS, { after: from, types: 'device_authorization.started', limit: 1000 })).events.filter((e) => e.data.clientName === clientName)).length === 1,
      30_000,
    );
    expect(starts[0]!.userAgent).toBe('prospect/0.1.0 (linux; node 20)');
  });

  it('records the User-Agent of every request behind an event: sign-up, settings, second factors, consent and code exchange, refresh, revocation, the admin API', async () => {
    const UA = 'Mozilla/5.0 (X11; Linux x86_64) ua-everywhere/1.0';
    const from = (await readAll()).at(-1) ?? STREAM_START_ID;
    const web = webClient(api);
    // Every request of this browser says who it is, as a browser does.
    web.agent.set('user-agent', UA);
    const email = `ua-${Date.now()}@example.com`;
    expect((await signUp(web, { name: 'Ua Person', email, password: PASSWORD })).status).toBe(303);
    const person = (await userByEmail(api, email))!;
    expect((await postFrom(web, '/settings/account', '/settings/account/name', { name: 'Ua Renamed' })).status).toBe(303);
    await enrolTotp(web);

    // A client registered through the admin API, a consent on its page, the code exchanged, the pair refreshed and revoked.
    const clientId = `ua-tool-${Date.now()}`;
    const registered = await request(api, 'POST', '/api/admin/clients', {
      json: { id: clientId, name: 'The UA tool', allowedScopes: ['openid', 'profile', 'email'], redirectUris: ['https://tool.example.com/callback'] },
      token: adminToken,
      headers: { 'user-agent': UA },
    });
    expect(registered.status).toBe(201);
    const { verifier, challenge } = pkce();
    const params = authorizationParams(clientId, 'https://tool.example.com/callback', challenge);
    const back = await approveIn(web, params);
    const exchanged = await tokenRequest(
      api,
      { grant_type: 'authorization_code', client_id: clientId, code: back.searchParams.get('code')!, redirect_uri: 'https://tool.example.com/callback', code_verifier: verifier },
      { 'user-agent': UA },
    );
    expect(exchanged.status).toBe(200);
    const refreshed = await tokenRequest(api, { grant_type: 'refresh_token', client_id: clientId, refresh_token: exchanged.body.refresh_token }, { 'user-agent': UA });
    expect(refreshed.status).toBe(200);
    const revoked = await request(api, 'POST', OAUTH_ROUTES.revoke, {
      body: new URLSearchParams({ token: refreshed.body.refresh_token, client_id: clientId }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': UA },
    });
    expect(revoked.status).toBe(200);
    // And an administrator disables the account through the admin API.
    expect((await request(api, 'PATCH', `/api/admin/users/${person.id}`, { json: { disabled: true }, token: adminToken, headers: { 'user-agent': UA } })).status).toBe(200);

    const expected = ['user.signed_up', 'user.renamed', 'factor.totp_added', 'client.created', 'consent.granted', 'authorization_code.exchanged', 'token.refreshed', 'grant.revoked', 'user.disabled'];
    let events: EventPage['events'] = [];
    const ours = (e: EventPage['events'][number]) => e.actor.id === person.id || e.subject?.id === person.id || e.data.clientId === clientId;
    await waitFor(
      'the events to settle',
      async () => {
        events = (await page(api, ADMIN_EVENTS, { after: from, limit: 1000 })).events.filter(ours);
        return expected.every((type) => events.some((e) => e.type === type));
      },
      30_000,
    );
    // Every one of them, those listed and any other these requests recorded (recovery codes, the revocation's tokens), has it.
    expect(events.filter((e) => e.userAgent !== UA).map((e) => [e.type, e.userAgent])).toEqual([]);
    expect(events.length).toBeGreaterThanOrEqual(expected.length);
  });

  it('records the CLI’s User-Agent on a device login’s redemption and cancellation, and the caller’s on a password reset request', async () => {
    const CLI = 'prospect/0.1.0 (linux; node 20)';
    const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) forgot/1.0';
    const from = (await readAll()).at(-1) ?? STREAM_START_ID;
    const person = await createUser(api);
    const cli = { 'user-agent': CLI };
    const start = async () => (await request(api, 'POST', ROUTES.deviceStart, { json: { clientName: 'prospect CLI 0.1.0', hostname: 'laptop' }, headers: cli })).body as { deviceCode: string; userCode: string };
    const redeemed = await start();
    await approve(api, redeemed.userCode, person);
    expect((await request(api, 'POST', ROUTES.devicePoll, { json: { deviceCode: redeemed.deviceCode }, headers: cli })).status).toBe(200);
    const cancelled = await start();
    expect((await request(api, 'POST', ROUTES.deviceCancel, { json: { deviceCode: cancelled.deviceCode }, headers: cli })).status).toBeLessThan(300);
    const web = webClient(api);
    web.agent.set('user-agent', BROWSER);
    expect((await postFrom(web, '/password/forgot', '/password/forgot', { email: person.email })).status).toBeLessThan(400);

    const wanted = ['grant.redeemed', 'device_authorization.cancelled', 'password.reset_requested'];
    let events: EventPage['events'] = [];
    await waitFor(
      'the events to settle',
      async () => {
        // This file's tests run one at a time: every event of these types after `from` is this test's.
        events = (await page(api, ADMIN_EVENTS, { after: from, types: wanted.join(','), limit: 1000 })).events;
        return wanted.every((type) => events.some((e) => e.type === type));
      },
      30_000,
    );
    expect(Object.fromEntries(events.map((e) => [e.type, e.userAgent]))).toEqual({ 'grant.redeemed': CLI, 'device_authorization.cancelled': CLI, 'password.reset_requested': BROWSER });
  });

  it('records no User-Agent for work no request is behind', async () => {
    const from = (await readAll()).at(-1) ?? STREAM_START_ID;
    await api.app.get(AuditService).record('admin.api_action', { detail: { action: 'outside any request' } });
    const { events } = await settledPage(ADMIN_EVENTS, { after: from, types: 'admin.action' }, adminToken, 1);
    expect(events.find((e) => e.data.action === 'outside any request')?.userAgent).toBeNull();
  });

  it('answers a bad cursor, type or limit with 400, and the instance’s stream to admins only', async () => {
    for (const query of ['after=evt_nope', 'after=123', 'types=user.signed_in,nope', 'types=web.login', 'limit=0', 'limit=1001', 'limit=ten', 'after=a&after=b', 'types=a&types=b']) {
      const res = await request(api, 'GET', `${ADMIN_EVENTS}?${query}`, { token: adminToken });
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(res.body.message).toBeTruthy();
    }
    const person = await createUser(api);
    const token = await orgsToken(api, person.id, ['profile', 'orgs']);
    expect((await request(api, 'GET', ADMIN_EVENTS, { token })).status).toBe(403);
    // A cursor from before everything still kept (an old one, past retention) just continues.
    const { events } = await page(api, ADMIN_EVENTS, { after: 'evt_00000000000000000000000000', limit: 3 });
    expect(events).toHaveLength(3);
  });
});
