import type { AddressInfo } from 'node:net';
import dns2 from 'dns2';
import { RetentionService } from '../../src/retention/retention.service.js';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.js';
import { eventually, waitFor } from '../support/eventually.js';
import { FakeClock } from '../support/fake-clock.js';
import { request } from '../support/http.js';
import { addMember, createOrganization, orgsToken, personWithToken } from '../support/organization-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { postFrom, signInAs } from '../support/web-client.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const { Packet } = dns2;

/** A real DNS server (dns2) on a loopback UDP port answering A and AAAA records set per name. */
async function startDnsServer() {
  const zone = new Map<string, string[]>();
  const server = dns2.createServer({
    udp: true,
    handle: (req, send) => {
      const response = Packet.createResponseFromRequest(req);
      const [question] = req.questions;
      const addresses = zone.get(question?.name.toLowerCase() ?? '');
      if (!addresses) response.header.rcode = 3; // NXDOMAIN
      else
        for (const address of addresses) {
          const v6 = address.includes(':');
          if (question?.type === (v6 ? Packet.TYPE.AAAA : Packet.TYPE.A)) {
            (response.answers as unknown[]).push({ name: question.name, type: v6 ? Packet.TYPE.AAAA : Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 0, address });
          }
        }
      send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  return { zone, port: (addresses.udp as AddressInfo).port, close: () => server.close() };
}

/** Signed webhooks (issue #46 item 3), delivered to a real receiver that verifies them with `standardwebhooks`. */
describe('/api/orgs/{slug}/webhooks', () => {
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let database: TestDatabase;
  let api: TestApp;
  const clock = new FakeClock(Date.now());
  let env: Record<string, string>;
  beforeAll(async () => {
    dns = await startDnsServer();
    database = await createTestDatabase({ migrated: true });
    env = { DNS_SERVERS: `127.0.0.1:${dns.port}`, WEBHOOKS_ALLOW_INSECURE_URLS: 'true', WEBHOOK_RETRY_BASE_SECONDS: '30' };
    api = await startTestApp({ database, clock, env });
  });
  afterAll(async () => {
    await api?.close();
    await database?.drop();
    await dns?.close();
  });

  const call = (method: string, path: string, token: string, json?: unknown) => request(api, method, path, { json, token });

  async function team() {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner);
    const admin = await personWithToken(api);
    const member = await personWithToken(api);
    await addMember(api, slug, owner.id, admin, 'admin');
    await addMember(api, slug, owner.id, member, 'member');
    return { slug, owner, admin, member };
  }

  async function register(slug: string, token: string, url: string, types?: string[]) {
    const res = await call('POST', `/api/orgs/${slug}/webhooks`, token, { url, ...(types ? { types } : {}) });
    expect(res.status).toBe(201);
    return res.body as { id: string; secret: string };
  }

  /** Events of the organization: each rename is one (`organization.renamed`). */
  async function renames(slug: string, token: string, n: number, from = 0) {
    for (let i = from; i < from + n; i++) expect((await call('PATCH', `/api/orgs/${slug}`, token, { name: `Acme ${i}` })).status).toBe(200);
  }

  const log = async (slug: string, token: string, id: string) => (await call('GET', `/api/orgs/${slug}/webhooks/${id}/deliveries`, token)).body as Array<Record<string, any>>;

  it('registers an endpoint for admins only, shows its secret once, and delivers each event signed, the event itself as the body', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const t = await team();
      expect((await call('POST', `/api/orgs/${t.slug}/webhooks`, t.member.token, { url: receiver.url })).status).toBe(403);
      const created = await register(t.slug, t.admin.token, receiver.url);
      expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      receiver.verifyWith(created.secret);
      const listed = await call('GET', `/api/orgs/${t.slug}/webhooks`, t.admin.token);
      expect(listed.body).toEqual([{ id: created.id, url: receiver.url, types: [], disabled: false, disabledReason: null, previousSecretValidUntil: null, createdAt: expect.any(String) }]);
      expect(JSON.stringify(listed.body)).not.toContain(created.secret.slice(6));

      await renames(t.slug, t.owner.token, 3);
      await waitFor('three deliveries', () => receiver.accepted.length === 3);
      expect(receiver.unverified).toEqual([]);
      expect(receiver.accepted.map((d) => d.payload.data)).toEqual([{ name: 'Acme 0' }, { name: 'Acme 1' }, { name: 'Acme 2' }]);
      for (const d of receiver.accepted) {
        expect(d.payload.id).toBe(d.id);
        expect(d.payload).toMatchObject({ id: expect.stringMatching(/^evt_/), type: expect.any(String), occurredAt: expect.any(String), organization: { slug: t.slug } });
      }
      await waitFor('the log to say delivered', async () => (await log(t.slug, t.admin.token, created.id)).every((d) => d.state === 'delivered'));

      // Types: an endpoint for other types gets none of these.
      const other = await register(t.slug, t.admin.token, receiver.url, ['member.added']);
      await renames(t.slug, t.owner.token, 1, 3);
      // The first endpoint watches every type: it gets the other's creation, then the rename (in order,
      // perhaps in one go: wait for the last, not for a count passed on the way).
      await waitFor('the rename after the other endpoint’s creation', () => receiver.accepted.some((d) => (d.payload.data as { name?: string } | undefined)?.name === 'Acme 3'));
      expect(receiver.accepted.slice(3).map((d) => d.payload.type)).toEqual(['webhook.created', 'organization.renamed']);
      await api.app.get(WebhookDispatcher).dispatchOnce();
      expect(await log(t.slug, t.admin.token, other.id)).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it('delivers every event exactly once and in order to a receiver down, then failing, then back, across a restart, retrying with backoff', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const t = await team();
      const created = await register(t.slug, t.admin.token, receiver.url);
      receiver.verifyWith(created.secret);
      receiver.mode = 'down';
      await renames(t.slug, t.owner.token, 3);
      // The first event fails; the others wait behind it (order per endpoint).
      await waitFor('a failed first try', async () => (await log(t.slug, t.admin.token, created.id)).some((d) => d.attempts === 1 && d.lastError));
      let entries = await log(t.slug, t.admin.token, created.id);
      expect(entries.map((d) => d.attempts)).toEqual([0, 0, 1]);
      const first = entries[2]!;
      // The first retry after WEBHOOK_RETRY_BASE_SECONDS (with up to 10% jitter).
      const wait = (Date.parse(first.nextAttemptAt) - clock.now().getTime()) / 1000;
      expect(wait).toBeGreaterThanOrEqual(30);
      expect(wait).toBeLessThanOrEqual(33);

      // Restart the service in the middle: the outbox is in Postgres.
      await api.close();
      api = await startTestApp({ database, clock, env });
      receiver.mode = 500;
      const requestsBefore = receiver.requests.length;
      clock.advanceSeconds(34);
      await waitFor('a second try answered 500', async () => (await log(t.slug, t.admin.token, created.id))[2]!.lastStatus === 500);
      entries = await log(t.slug, t.admin.token, created.id);
      expect(entries[2]).toMatchObject({ attempts: 2, state: 'pending', lastStatus: 500 });
      expect(receiver.requests.length).toBe(requestsBefore + 1);
      // Doubling: not due again 34 s later…
      clock.advanceSeconds(34);
      expect(await eventually(() => receiver.requests.length > requestsBefore + 1, 1_500)).toBe(false);
      receiver.mode = 200;
      // …but 60 s (with jitter) after the second failure.
      clock.advanceSeconds(40);
      await waitFor('all three delivered', () => receiver.accepted.length === 3);
      const ids = receiver.accepted.map((d) => d.id);
      expect(new Set(ids).size).toBe(3);
      expect(receiver.accepted.map((d) => d.payload.data)).toEqual([{ name: 'Acme 0' }, { name: 'Acme 1' }, { name: 'Acme 2' }]);
      // The same webhook-id on every try of an event.
      expect(new Set(receiver.requests.filter((r) => r.headers['webhook-id'] === ids[0]).map((r) => r.headers['webhook-id'])).size).toBe(1);
      expect(receiver.unverified).toEqual([]);

      // Redeliver: the same event again, same webhook-id and body.
      const done = (await log(t.slug, t.admin.token, created.id)).at(-1)!;
      const again = await call('POST', `/api/orgs/${t.slug}/webhooks/${created.id}/deliveries/${done.id}/redeliver`, t.admin.token);
      expect(again.status).toBe(202);
      expect(again.body).toMatchObject({ eventId: ids[0], redeliveryOf: done.id, state: 'pending' });
      await waitFor('the redelivery', () => receiver.accepted.length === 4);
      expect(receiver.accepted[3]!.id).toBe(ids[0]);
      expect(receiver.accepted[3]!.body).toBe(receiver.accepted[0]!.body);
    } finally {
      await receiver.close();
    }
  });

  it('records every change of an endpoint in the organization’s log, by whom, from where: created, updated, secret rotated, deleted', async () => {
    const watcher = await startWebhookReceiver();
    const target = await startWebhookReceiver();
    const UA = 'Mozilla/5.0 (X11; Linux x86_64) webhooks-audit/1.0';
    const asAdmin = (t: { admin: { token: string } }, method: string, path: string, json?: unknown) => request(api, method, path, { json, token: t.admin.token, headers: { 'user-agent': UA } });
    try {
      const t = await team();
      const from = (await call('GET', `/api/orgs/${t.slug}/events?limit=1000`, t.owner.token)).body.next as string;
      // Another endpoint of the organization watches webhook changes: how a security team hears of a new one.
      const watching = await register(t.slug, t.owner.token, watcher.url, ['webhook.created', 'webhook.updated', 'webhook.secret_rotated', 'webhook.deleted', 'webhook.disabled']);
      watcher.verifyWith(watching.secret);

      // A receiver's token in the path and query: the events keep only the origin.
      const url = `${target.url}/T0K3N-in-the-path?key=s3cret`;
      const created = await asAdmin(t, 'POST', `/api/orgs/${t.slug}/webhooks`, { url, types: ['member.added'] });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect((await asAdmin(t, 'PATCH', `/api/orgs/${t.slug}/webhooks/${id}`, { url: target.url, types: [] })).status).toBe(200);
      expect((await asAdmin(t, 'PATCH', `/api/orgs/${t.slug}/webhooks/${id}`, { disabled: true })).status).toBe(200);
      expect((await asAdmin(t, 'POST', `/api/orgs/${t.slug}/webhooks/${id}/rotate-secret`)).status).toBe(200);
      expect((await asAdmin(t, 'DELETE', `/api/orgs/${t.slug}/webhooks/${id}`)).status).toBe(204);
      // Refused changes record nothing.
      expect((await asAdmin(t, 'DELETE', `/api/orgs/${t.slug}/webhooks/${id}`)).status).toBe(404);
      expect((await request(api, 'POST', `/api/orgs/${t.slug}/webhooks`, { json: { url: target.url }, token: t.member.token })).status).toBe(403);

      const types = 'webhook.created,webhook.updated,webhook.secret_rotated,webhook.deleted,webhook.disabled';
      let events: Array<Record<string, any>> = [];
      await waitFor('the events of the changes', async () => (events = (await call('GET', `/api/orgs/${t.slug}/events?after=${from}&types=${types}`, t.owner.token)).body.events).length >= 6);
      const origin = new URL(target.url).origin;
      expect(events.map((e) => [e.type, e.subject, e.data])).toEqual([
        ['webhook.created', { type: 'webhook', id: watching.id }, { webhookId: watching.id, origin: new URL(watcher.url).origin, types: 'webhook.created,webhook.updated,webhook.secret_rotated,webhook.deleted,webhook.disabled' }],
        ['webhook.created', { type: 'webhook', id }, { webhookId: id, origin, types: 'member.added' }],
        ['webhook.updated', { type: 'webhook', id }, { webhookId: id, origin, changed: 'url,types', types: '*' }],
        ['webhook.updated', { type: 'webhook', id }, { webhookId: id, origin, changed: 'disabled', disabled: true }],
        ['webhook.secret_rotated', { type: 'webhook', id }, { webhookId: id, origin, previousSecretValidUntil: expect.any(String) }],
        ['webhook.deleted', { type: 'webhook', id }, { webhookId: id, origin }],
      ]);
      expect(JSON.stringify(events)).not.toMatch(/T0K3N|s3cret/);
      for (const event of events.slice(1)) {
        expect(event).toMatchObject({ actor: { type: 'user', id: t.admin.id }, organization: { slug: t.slug }, userAgent: UA, ip: expect.stringContaining('127.0.0.1') });
      }
      // The watcher received the other endpoint's five, not its own creation.
      await waitFor('the watcher’s deliveries', () => watcher.accepted.length === 5);
      expect(watcher.unverified).toEqual([]);
      expect(watcher.accepted.map((d) => d.payload.type)).toEqual(['webhook.created', 'webhook.updated', 'webhook.updated', 'webhook.secret_rotated', 'webhook.deleted']);
      expect(watcher.accepted.map((d) => d.id)).toEqual(events.slice(1).map((e) => e.id));
      // In the organization's log page too, in words.
      const web = await signInAs(api, t.owner.email, 'correct horse battery');
      const logPage = await web.send('GET', `/orgs/${t.slug}`);
      expect(logPage.text).toContain(`Rotated the secret of the webhook ${origin}`);
      expect(logPage.text).toContain(`Deleted the webhook ${origin}`);
    } finally {
      await watcher.close();
      await target.close();
    }
  });

  it('signs with both secrets for 24 hours after a rotation, then with the new one only', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const t = await team();
      const created = await register(t.slug, t.admin.token, receiver.url);
      const rotated = await call('POST', `/api/orgs/${t.slug}/webhooks/${created.id}/rotate-secret`, t.admin.token);
      expect(rotated.status).toBe(200);
      expect(rotated.body.secret).toMatch(/^whsec_/);
      expect(rotated.body.secret).not.toBe(created.secret);
      // Every delivery must verify with each secret alone.
      receiver.verifyWith(created.secret, rotated.body.secret);
      await renames(t.slug, t.owner.token, 1);
      await waitFor('a delivery', () => receiver.accepted.length === 1);
      expect(receiver.unverified).toEqual([]);
      expect(receiver.accepted[0]!.signature.split(' ')).toHaveLength(2);

      clock.advanceSeconds(24 * 3600 + 1);
      receiver.verifyWith(rotated.body.secret);
      await renames(t.slug, t.owner.token, 1, 1);
      await waitFor('a second delivery', () => receiver.accepted.length === 2);
      expect(receiver.accepted[1]!.signature.split(' ')).toHaveLength(1);
      receiver.verifyWith(created.secret);
      receiver.mode = 200;
      await renames(t.slug, t.owner.token, 1, 2);
      await waitFor('a third request', () => receiver.requests.length === 3);
      expect(receiver.accepted).toHaveLength(2);
    } finally {
      await receiver.close();
    }
  });

  it('refuses loopback, private and link-local addresses, by IP and by name, at registration', async () => {
    const t = await team();
    dns.zone.set('loop.webhooks.test', ['127.0.0.1']);
    dns.zone.set('ten.webhooks.test', ['10.1.2.3']);
    dns.zone.set('metadata.webhooks.test', ['169.254.169.254']);
    dns.zone.set('six.webhooks.test', ['::1']);
    dns.zone.set('mixed.webhooks.test', ['93.184.215.14', '10.0.0.1']);
    Object.assign(api.config, { webhooksAllowInsecureUrls: false });
    try {
      for (const url of [
        'https://127.0.0.1/hook',
        'https://10.0.0.7/hook',
        'https://169.254.169.254/latest/meta-data',
        'https://[::1]/hook',
        'https://[::ffff:10.0.0.1]/hook',
        'https://loop.webhooks.test/hook',
        'https://ten.webhooks.test/hook',
        'https://metadata.webhooks.test/hook',
        'https://six.webhooks.test/hook',
        'https://mixed.webhooks.test/hook',
        'http://93.184.215.14/hook',
        'https://nowhere.webhooks.test/hook',
      ]) {
        const res = await call('POST', `/api/orgs/${t.slug}/webhooks`, t.admin.token, { url });
        expect({ url, status: res.status, error: res.body.error }).toEqual({ url, status: 400, error: 'invalid_request' });
      }
    } finally {
      Object.assign(api.config, { webhooksAllowInsecureUrls: true });
    }
    // Insecure URLs allowed: loopback is, private and link-local still not.
    expect((await call('POST', `/api/orgs/${t.slug}/webhooks`, t.admin.token, { url: 'http://loop.webhooks.test:9/hook' })).status).toBe(201);
    for (const url of ['http://10.0.0.7/hook', 'http://metadata.webhooks.test/hook', 'ftp://127.0.0.1/x', 'not a url']) {
      expect((await call('POST', `/api/orgs/${t.slug}/webhooks`, t.admin.token, { url })).status).toBe(400);
    }
  });

  it('checks the address again at delivery (a name rebound to a private address, loopback no longer allowed) and connects to the checked one', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const t = await team();
      dns.zone.set('rebind.webhooks.test', ['127.0.0.1']);
      const created = await register(t.slug, t.admin.token, `http://rebind.webhooks.test:${receiver.port}/hooks`);
      receiver.verifyWith(created.secret);
      await renames(t.slug, t.owner.token, 1);
      await waitFor('the first delivery', () => receiver.accepted.length === 1);

      dns.zone.set('rebind.webhooks.test', ['10.0.0.1']);
      await renames(t.slug, t.owner.token, 1, 1);
      // A try's outcome is written after it: wait for its own reason.
      const tried = (n: number, reason: RegExp) => async () => {
        const entries = await log(t.slug, t.admin.token, created.id);
        return entries.length === 2 && entries[0]!.attempts === n && reason.test(entries[0]!.lastError ?? '');
      };
      await waitFor('a refused try', tried(1, /10\.0\.0\.1/));
      expect((await log(t.slug, t.admin.token, created.id))[0]).toMatchObject({ state: 'pending', lastStatus: null, lastError: expect.stringContaining('private') });

      dns.zone.set('rebind.webhooks.test', ['169.254.169.254']);
      clock.advanceSeconds(40);
      await waitFor('a second refused try', tried(2, /169\.254\.169\.254/));
      expect((await log(t.slug, t.admin.token, created.id))[0]!.lastError).toContain('169.254.169.254');

      dns.zone.set('rebind.webhooks.test', ['127.0.0.1']);
      Object.assign(api.config, { webhooksAllowInsecureUrls: false });
      try {
        clock.advanceSeconds(80);
        await waitFor('a third refused try', tried(3, /loopback/));
        expect((await log(t.slug, t.admin.token, created.id))[0]!.lastError).toMatch(/https|loopback/);
      } finally {
        Object.assign(api.config, { webhooksAllowInsecureUrls: true });
      }
      expect(receiver.requests).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('does not follow a redirect: a 3xx is a failed try, and the target hears nothing', async () => {
    const receiver = await startWebhookReceiver();
    const target = await startWebhookReceiver();
    try {
      const t = await team();
      const created = await register(t.slug, t.admin.token, receiver.url);
      receiver.mode = { redirectTo: target.url };
      await renames(t.slug, t.owner.token, 1);
      await waitFor('a failed try', async () => (await log(t.slug, t.admin.token, created.id))[0]?.lastStatus === 302);
      expect((await log(t.slug, t.admin.token, created.id))[0]).toMatchObject({ state: 'pending', lastStatus: 302, lastError: expect.stringContaining('redirect') });
      expect(target.requests).toHaveLength(0);
    } finally {
      await receiver.close();
      await target.close();
    }
  });

  it('cuts an endpoint that does not answer within 10 seconds: a failed try, retried', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const t = await team();
      const created = await register(t.slug, t.admin.token, receiver.url);
      receiver.mode = 'hang';
      await renames(t.slug, t.owner.token, 1);
      await waitFor('the try cut', async () => /no answer within 10 s/.test((await log(t.slug, t.admin.token, created.id))[0]?.lastError ?? ''), 30_000);
      expect((await log(t.slug, t.admin.token, created.id))[0]).toMatchObject({ state: 'pending', attempts: 1, lastStatus: null });
    } finally {
      await receiver.close();
    }
  });

  it('gives up after 3 days: the endpoint disabled, and enabled again it sends what waited', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const t = await team();
      const created = await register(t.slug, t.admin.token, receiver.url);
      receiver.verifyWith(created.secret);
      receiver.mode = 500;
      await renames(t.slug, t.owner.token, 2);
      await waitFor('a failed try', async () => (await log(t.slug, t.admin.token, created.id)).some((d) => d.lastStatus === 500));
      const disabled = async () => (await call('GET', `/api/orgs/${t.slug}/webhooks/${created.id}`, t.admin.token)).body.disabled === true;
      // The oldest event's try count once its outcome is written (its next try is then in the future of the clock).
      const recordedTries = async () => {
        const first = (await log(t.slug, t.admin.token, created.id)).at(-1)!;
        return first.state === 'pending' && Date.parse(first.nextAttemptAt) > clock.now().getTime() ? first.attempts : -1;
      };
      await waitFor('the first outcome', async () => (await recordedTries()) === 1);
      for (let tries = 1; tries < 30 && !(await disabled()); tries++) {
        // Longer than the longest wait between tries (12 hours and its jitter).
        clock.advanceSeconds(14 * 3600);
        await waitFor(`try ${tries + 1} recorded`, async () => (await recordedTries()) === tries + 1 || (await disabled()));
      }
      await waitFor('the endpoint disabled', async () => (await call('GET', `/api/orgs/${t.slug}/webhooks/${created.id}`, t.admin.token)).body.disabled === true);
      const webhook = (await call('GET', `/api/orgs/${t.slug}/webhooks/${created.id}`, t.admin.token)).body;
      expect(webhook.disabledReason).toContain('3 days');
      const entries = await log(t.slug, t.admin.token, created.id);
      expect(entries.map((d) => d.state)).toEqual(['pending', 'failed']);
      // Its admins told (the owner and the admin; without SMTP_URL the mail is a log line).
      await waitFor('the mails to the admins', () => api.logs().split('\n').filter((l) => l.includes('A webhook of your organization was disabled')).length >= 2);
      // In the organization's log: by the instance, no request behind it.
      let disabledEvents: Array<Record<string, any>> = [];
      await waitFor('the event', async () => (disabledEvents = (await call('GET', `/api/orgs/${t.slug}/events?types=webhook.disabled`, t.owner.token)).body.events).length === 1);
      expect(disabledEvents[0]).toMatchObject({
        actor: { type: 'system', id: null },
        subject: { type: 'webhook', id: created.id },
        ip: null,
        userAgent: null,
        data: { webhookId: created.id, origin: new URL(receiver.url).origin, reason: 'answered 500' },
      });

      receiver.mode = 200;
      expect((await call('PATCH', `/api/orgs/${t.slug}/webhooks/${created.id}`, t.admin.token, { disabled: false })).status).toBe(200);
      await waitFor('the waiting event', () => receiver.accepted.length === 1);
      expect(receiver.accepted[0]!.payload.data).toEqual({ name: 'Acme 1' });
    } finally {
      await receiver.close();
    }
  });

  it('keeps a month of the delivery log: the hourly purge deletes deliveries that ended before', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const t = await team();
      const created = await register(t.slug, t.admin.token, receiver.url);
      receiver.verifyWith(created.secret);
      await renames(t.slug, t.owner.token, 1);
      await waitFor('delivered', async () => (await log(t.slug, t.admin.token, created.id))[0]?.state === 'delivered');
      clock.advanceSeconds(29 * 24 * 3600);
      await api.app.get(RetentionService).purge();
      expect(await log(t.slug, t.admin.token, created.id)).toHaveLength(1);
      clock.advanceSeconds(2 * 24 * 3600);
      await api.app.get(RetentionService).purge();
      // A new token: the first one expired with the month.
      expect(await log(t.slug, await orgsToken(api, t.admin.id), created.id)).toEqual([]);
    } finally {
      await receiver.close();
    }
  });

  it('answers 400 to a bad body, 404 to another organization’s webhook, and deletes', async () => {
    const t = await team();
    const other = await team();
    expect((await call('POST', `/api/orgs/${t.slug}/webhooks`, t.admin.token, { url: 'https://x.example', types: ['no dots'] })).status).toBe(400);
    expect((await call('POST', `/api/orgs/${t.slug}/webhooks`, t.admin.token, {})).status).toBe(400);
    const created = await register(t.slug, t.admin.token, 'http://127.0.0.1:9/hook');
    expect((await call('GET', `/api/orgs/${other.slug}/webhooks/${created.id}`, other.admin.token)).status).toBe(404);
    expect((await call('GET', `/api/orgs/${t.slug}/webhooks/not-a-uuid`, t.admin.token)).status).toBe(404);
    expect((await call('PATCH', `/api/orgs/${t.slug}/webhooks/${created.id}`, t.admin.token, {})).status).toBe(400);
    expect((await call('DELETE', `/api/orgs/${t.slug}/webhooks/${created.id}`, t.admin.token)).status).toBe(204);
    expect((await call('GET', `/api/orgs/${t.slug}/webhooks/${created.id}`, t.admin.token)).status).toBe(404);
  });

  it('the page /orgs/{slug}/webhooks: admins add one (its secret shown once), see the log, redeliver, disable and delete; members are refused', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const t = await team();
      const page = `/orgs/${t.slug}/webhooks`;
      const member = await signInAs(api, t.member.email, 'correct horse battery');
      expect((await member.send('GET', page)).status).toBe(403);
      const web = await signInAs(api, t.admin.email, 'correct horse battery');
      const empty = await web.send('GET', page);
      expect(empty.status).toBe(200);
      expect(empty.text).toContain('No webhooks yet.');
      expect(empty.text).toContain('aria-current="page">Webhooks');

      expect((await postFrom(web, page, page, { url: 'https://10.0.0.1/hook', types: '' })).status).toBe(400);
      const added = await postFrom(web, page, page, { url: receiver.url, types: 'organization.renamed' });
      expect(added.status).toBe(201);
      const secret = /id="new-secret" class="token" type="text" readonly value="(whsec_[^"]+)"/.exec(added.text)?.[1]?.replace(/&#x3D;/g, '=').replace(/&#x2F;/g, '/').replace(/&#x2B;/g, '+');
      expect(secret).toMatch(/^whsec_/);
      receiver.verifyWith(secret!);
      // Shown once: not on the page any more.
      const again = await web.send('GET', page);
      expect(again.text).not.toContain('new-secret');

      await renames(t.slug, t.owner.token, 1);
      await waitFor('the delivery', () => receiver.accepted.length === 1);
      const [endpoint] = (await call('GET', `/api/orgs/${t.slug}/webhooks`, t.admin.token)).body as Array<{ id: string }>;
      await waitFor('the log to say delivered', async () => (await log(t.slug, t.admin.token, endpoint!.id))[0]?.state === 'delivered');
      const withLog = await web.send('GET', page);
      expect(withLog.text).toContain('organization.renamed');
      const deliveryId = (await log(t.slug, t.admin.token, endpoint!.id))[0]!.id;
      expect((await postFrom(web, page, `${page}/${endpoint!.id}/deliveries/${deliveryId}/redeliver`)).status).toBe(303);
      await waitFor('the redelivery', () => receiver.accepted.length === 2);
      expect(receiver.accepted[1]!.id).toBe(receiver.accepted[0]!.id);

      expect((await postFrom(web, page, `${page}/${endpoint!.id}/disable`)).status).toBe(303);
      expect((await call('GET', `/api/orgs/${t.slug}/webhooks/${endpoint!.id}`, t.admin.token)).body.disabled).toBe(true);
      expect((await postFrom(web, page, `${page}/${endpoint!.id}/remove`)).status).toBe(303);
      expect((await web.send('GET', page)).text).toContain('No webhooks yet.');
    } finally {
      await receiver.close();
    }
  });
});
