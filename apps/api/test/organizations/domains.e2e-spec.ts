import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import dns2 from 'dns2';
import { ApiException } from '../../src/common/api-exception.js';
import { AppConfig } from '../../src/config/app-config.js';
import { UnitOfWork } from '../../src/database/unit-of-work.js';
import { DomainTxtLookup } from '../../src/organizations/domain-txt-lookup.js';
import { OrganizationDomainsService } from '../../src/organizations/organization-domains.service.js';
import { OrganizationsService } from '../../src/organizations/organizations.service.js';
import { DOMAIN_VERIFICATIONS_PER_HOUR } from '../../src/rate-limits/rate-limits.js';
import { UsersService } from '../../src/users/users.service.js';
import { authEvents } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { addMember, createOrganization, personWithToken } from '../support/organization-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { launchBrowser, SCREENSHOTS } from '../support/browser.js';
import { postFrom, signInAs } from '../support/web-client.js';

const { Packet } = dns2;
/** RFC 1035 §4.1.1: the name does not exist. */
const NXDOMAIN = 3;

/**
 * A real DNS server on a loopback UDP port (dns2): each name answers the TXT values set for it,
 * NOERROR with no answer for a name set to [], and NXDOMAIN for any other name.
 */
async function startDnsServer() {
  const zone = new Map<string, Array<string | string[]>>();
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const name = question?.name.toLowerCase() ?? '';
      const values = zone.get(name);
      if (!values) response.header.rcode = NXDOMAIN;
      else if (question?.type === Packet.TYPE.TXT) {
        // dns2's types want a parsed Resource; a plain record is what its encoder writes.
        for (const data of values) (response.answers as unknown[]).push({ name: question.name, type: Packet.TYPE.TXT, class: Packet.CLASS.IN, ttl: 0, data });
      }
      send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  return { zone, port: (addresses.udp as AddressInfo).port, close: () => server.close() };
}

let counter = 0;
/** A domain no other run of this spec used (the test database outlives runs). */
const freshDomain = () => `d${++counter}-${Date.now().toString(36)}-${process.pid}.example`;

/** Verified domains and joining through them (issue #44), against a real DNS server. */
describe('/api/orgs/{slug}/domains', () => {
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let api: TestApp;
  beforeAll(async () => {
    dns = await startDnsServer();
    api = await startTestApp({ env: { DNS_SERVERS: `127.0.0.1:${dns.port}` } });
  });
  afterAll(async () => {
    await api?.close();
    await dns?.close();
  });

  const call = (method: string, path: string, token: string, json?: unknown) => request(api, method, path, { json, token });
  const orgIdOf = async (slug: string, ownerId: string) => (await api.app.get(OrganizationsService).membership(slug, ownerId, null))!.id;

  /** An organization with an owner, an admin and a member, and a domain it added (not verified). */
  async function team() {
    const owner = await personWithToken(api);
    const slug = await createOrganization(api, owner);
    const admin = await personWithToken(api);
    const member = await personWithToken(api);
    await addMember(api, slug, owner.id, admin, 'admin');
    await addMember(api, slug, owner.id, member, 'member');
    return { slug, owner, admin, member };
  }

  async function addDomain(slug: string, token: string, domain = freshDomain()) {
    const res = await call('POST', `/api/orgs/${slug}/domains`, token, { domain });
    expect(res.status).toBe(201);
    return { domain, record: res.body.verificationRecord as string };
  }

  /** A team with a verified domain whose join policy is `policy`. */
  async function verifiedTeam(policy: 'invite' | 'request' | 'auto') {
    const t = await team();
    const { domain, record } = await addDomain(t.slug, t.admin.token);
    dns.zone.set(domain, [record]);
    expect((await call('POST', `/api/orgs/${t.slug}/domains/${domain}/verify`, t.admin.token)).status).toBe(200);
    if (policy !== 'invite') expect((await call('PATCH', `/api/orgs/${t.slug}/domains/${domain}`, t.admin.token, { joinPolicy: policy })).status).toBe(200);
    return { ...t, domain };
  }

  it('adds a domain with its TXT record, verifies it when the record is on the domain, and logs both', async () => {
    const t = await team();
    const domain = freshDomain();
    const added = await call('POST', `/api/orgs/${t.slug}/domains`, t.admin.token, { domain: `  ${domain.toUpperCase()} ` });
    expect(added.status).toBe(201);
    expect(added.body).toEqual({ domain, verificationRecord: expect.stringMatching(/^prospect-verification=[A-Za-z0-9_-]{43}$/), verified: false, verifiedAt: null, joinPolicy: 'invite', enforceSso: false });
    expect((await call('POST', `/api/orgs/${t.slug}/domains`, t.admin.token, { domain })).status).toBe(409);

    // Among other TXT records, and split in two strings as long records are: the value is their concatenation.
    const record: string = added.body.verificationRecord;
    dns.zone.set(domain, ['v=spf1 -all', [record.slice(0, 10), record.slice(10)]]);
    const verified = await call('POST', `/api/orgs/${t.slug}/domains/${domain}/verify`, t.admin.token);
    expect(verified.status).toBe(200);
    expect(verified.body).toEqual({ ...added.body, verified: true, verifiedAt: expect.any(String) });
    expect((await call('GET', `/api/orgs/${t.slug}/domains`, t.owner.token)).body).toEqual([verified.body]);

    const orgId = await orgIdOf(t.slug, t.owner.id);
    const events = (await authEvents(api, { typePrefix: 'org.domain_', userId: t.admin.id })).filter((e) => e.detail?.domain === domain);
    expect(events.map((e) => e.type)).toEqual(['org.domain_add', 'org.domain_verify']);
    expect((await api.app.get(OrganizationsService).log(orgId, 50, 0)).map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['org.domain_add', 'org.domain_verify']));
    // What federation reads.
    expect(await api.app.get(OrganizationsService).verifiedDomains(orgId)).toEqual([domain]);
  });

  it('refuses a verification with 409 saying what DNS found: no such domain, no TXT records, other values', async () => {
    const t = await team();
    const { domain, record } = await addDomain(t.slug, t.admin.token);
    const verify = () => call('POST', `/api/orgs/${t.slug}/domains/${domain}/verify`, t.admin.token);

    const nxdomain = await verify();
    expect(nxdomain.status).toBe(409);
    expect(nxdomain.body.error).toBe('conflict');
    expect(nxdomain.body.message).toContain(`${domain} does not exist in DNS (NXDOMAIN)`);
    expect(nxdomain.body.message).toContain(record);

    dns.zone.set(domain, []);
    expect((await verify()).body.message).toContain(`${domain} has no TXT records`);

    dns.zone.set(domain, ['v=spf1 include:_spf.example.net -all', 'prospect-verification=not-the-token']);
    const wrong = await verify();
    expect(wrong.status).toBe(409);
    expect(wrong.body.message).toContain('"v=spf1 include:_spf.example.net -all", "prospect-verification=not-the-token"');

    expect((await call('GET', `/api/orgs/${t.slug}/domains`, t.admin.token)).body[0]).toMatchObject({ domain, verified: false, verifiedAt: null });
    expect(await authEvents(api, { type: 'org.domain_verify', userId: t.admin.id })).toEqual([]);
  });

  it('refuses a second organization a domain another verified: adding it, and verifying a claim made before', async () => {
    const first = await team();
    const second = await team();
    const domain = freshDomain();
    const early = await addDomain(second.slug, second.admin.token, domain);
    const { record } = await addDomain(first.slug, first.admin.token, domain);
    dns.zone.set(domain, [record, early.record]);
    expect((await call('POST', `/api/orgs/${first.slug}/domains/${domain}/verify`, first.admin.token)).status).toBe(200);

    const late = await team();
    const refused = await call('POST', `/api/orgs/${late.slug}/domains`, late.admin.token, { domain });
    expect(refused.status).toBe(409);
    expect(refused.body.message).toMatch(/another organization has verified/i);

    // The second's record is published too: still refused, it was verified first by another.
    const second409 = await call('POST', `/api/orgs/${second.slug}/domains/${domain}/verify`, second.admin.token);
    expect(second409.status).toBe(409);
    expect(second409.body.message).toMatch(/another organization has verified .* first/i);
  });

  it('two organizations verifying one domain at once, both records published: exactly one is verified', async () => {
    for (let round = 0; round < 5; round++) {
      const a = await team();
      const b = await team();
      const domain = freshDomain();
      const ra = await addDomain(a.slug, a.admin.token, domain);
      const rb = await addDomain(b.slug, b.admin.token, domain);
      dns.zone.set(domain, [ra.record, rb.record]);
      const answers = await Promise.all([a, b].map((t) => call('POST', `/api/orgs/${t.slug}/domains/${domain}/verify`, t.admin.token)));
      expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
      expect(answers.find((r) => r.status === 409)!.body.message).toMatch(/another organization/i);
      const owners = await Promise.all([a, b].map(async (t) => (await call('GET', `/api/orgs/${t.slug}/domains`, t.admin.token)).body[0].verified));
      expect(owners.filter(Boolean)).toHaveLength(1);
    }
  });

  it('domains are for admins and owners: a member gets 403 naming the role, an outsider 404', async () => {
    const t = await team();
    const { domain, record } = await addDomain(t.slug, t.owner.token);
    dns.zone.set(domain, [record]);
    const outsider = await personWithToken(api);
    const routes: Array<[string, string, unknown?]> = [
      ['GET', `/api/orgs/${t.slug}/domains`],
      ['POST', `/api/orgs/${t.slug}/domains`, { domain: freshDomain() }],
      ['POST', `/api/orgs/${t.slug}/domains/${domain}/verify`],
      ['PATCH', `/api/orgs/${t.slug}/domains/${domain}`, { joinPolicy: 'auto' }],
      ['DELETE', `/api/orgs/${t.slug}/domains/${domain}`],
      ['GET', `/api/orgs/${t.slug}/join-requests`],
    ];
    for (const [method, path, body] of routes) {
      const byMember = await call(method, path, t.member.token, body);
      expect({ method, path, status: byMember.status }).toEqual({ method, path, status: 403 });
      expect(byMember.body.message).toMatch(/only an admin or an owner .* you are a member/i);
      expect((await call(method, path, outsider.token, body)).status).toBe(404);
    }
    expect((await call('GET', `/api/orgs/${t.slug}/domains`, t.member.token)).status).toBe(403);
    expect((await call('GET', `/api/orgs/${t.slug}/domains`, t.admin.token)).body[0]).toMatchObject({ domain, verified: false });
  });

  it('refuses bad domains with 400, unknown ones with 404', async () => {
    const t = await team();
    for (const domain of ['localhost', 'not a domain', 'a..b', '-x.example', 'x'.repeat(64) + '.example']) {
      expect((await call('POST', `/api/orgs/${t.slug}/domains`, t.admin.token, { domain })).status).toBe(400);
    }
    expect((await call('POST', `/api/orgs/${t.slug}/domains/bad_domain/verify`, t.admin.token)).status).toBe(400);
    expect((await call('POST', `/api/orgs/${t.slug}/domains/${freshDomain()}/verify`, t.admin.token)).status).toBe(404);
    expect((await call('PATCH', `/api/orgs/${t.slug}/domains/${freshDomain()}`, t.admin.token, { joinPolicy: 'auto' })).status).toBe(404);
    expect((await call('DELETE', `/api/orgs/${t.slug}/domains/${freshDomain()}`, t.admin.token)).status).toBe(404);
    const { domain } = await addDomain(t.slug, t.admin.token);
    for (const body of [{}, { joinPolicy: 'everyone' }, { enforceSso: 'yes' }, { joinPolicy: 'auto', extra: 1 }]) {
      expect((await call('PATCH', `/api/orgs/${t.slug}/domains/${domain}`, t.admin.token, body)).status).toBe(400);
    }
  });

  it(`counts verifications per organization: ${DOMAIN_VERIFICATIONS_PER_HOUR} an hour, then 429 before DNS is asked`, async () => {
    const t = await team();
    const { domain, record } = await addDomain(t.slug, t.admin.token);
    for (let i = 0; i < DOMAIN_VERIFICATIONS_PER_HOUR; i++) {
      expect((await call('POST', `/api/orgs/${t.slug}/domains/${domain}/verify`, t.admin.token)).status).toBe(409);
    }
    dns.zone.set(domain, [record]);
    const limited = await call('POST', `/api/orgs/${t.slug}/domains/${domain}/verify`, t.admin.token);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another organization has its own count.
    const other = await team();
    const theirs = await addDomain(other.slug, other.admin.token);
    dns.zone.set(theirs.domain, [theirs.record]);
    expect((await call('POST', `/api/orgs/${other.slug}/domains/${theirs.domain}/verify`, other.admin.token)).status).toBe(200);
  });

  it('sets the join policy; enforces sign-in only on a verified domain of an organization with an enabled provider of its own; removes', async () => {
    const t = await team();
    const { domain, record } = await addDomain(t.slug, t.admin.token);
    const patch = (body: object) => call('PATCH', `/api/orgs/${t.slug}/domains/${domain}`, t.admin.token, body);

    const unverified = await patch({ enforceSso: true });
    expect(unverified.status).toBe(409);
    expect(unverified.body.message).toMatch(/verify .* before enforcing/i);
    expect((await patch({ joinPolicy: 'request' })).body).toMatchObject({ joinPolicy: 'request', enforceSso: false });

    dns.zone.set(domain, [record]);
    expect((await call('POST', `/api/orgs/${t.slug}/domains/${domain}/verify`, t.admin.token)).status).toBe(200);
    const noProvider = await patch({ enforceSso: true });
    expect(noProvider.status).toBe(409);
    expect(noProvider.body.message).toMatch(/no enabled identity provider of its own/);

    // sql-on-purpose: an organization's own provider, which federation/ registers (another part of #44); the hook reads only its organization and whether it is enabled
    const insertProvider = (disabled: boolean) =>
      api.dataSource.query(
        `INSERT INTO identity_providers (id, display_name, issuer, client_id, client_secret_sealed, token_endpoint_auth_method, scopes, email_domains, metadata, discovered_at, disabled_at, created_at, updated_at, organization_id)
         VALUES ($1, 'Team SSO', $2, 'client', '\\x00', 'client_secret_basic', 'openid email', ARRAY[$3], '{}', now(), CASE WHEN $4 THEN now() END, now(), now(), $5)`,
        [`p${Date.now().toString(36)}${counter++}`, `https://sso-${counter}-${Date.now()}.example`, domain, disabled, orgId],
      );
    const orgId = await orgIdOf(t.slug, t.owner.id);
    await insertProvider(true);
    expect((await patch({ enforceSso: true })).status).toBe(409);
    await insertProvider(false);
    const enforced = await patch({ enforceSso: true, joinPolicy: 'auto' });
    expect(enforced.status).toBe(200);
    expect(enforced.body).toMatchObject({ domain, verified: true, joinPolicy: 'auto', enforceSso: true });
    expect(await api.app.get(OrganizationsService).domainOwner(domain)).toMatchObject({ organizationId: orgId, enforceSso: true, joinPolicy: 'auto' });
    const updates = (await authEvents(api, { type: 'org.domain_update', userId: t.admin.id })).map((e) => e.detail);
    expect(updates).toEqual([
      { domain, joinPolicy: 'request' },
      { domain, joinPolicy: 'auto', enforceSso: true },
    ]);

    expect((await call('DELETE', `/api/orgs/${t.slug}/domains/${domain}`, t.admin.token)).status).toBe(204);
    expect((await call('GET', `/api/orgs/${t.slug}/domains`, t.admin.token)).body).toEqual([]);
    expect(await authEvents(api, { type: 'org.domain_remove', userId: t.admin.id })).toHaveLength(1);
    expect(await api.app.get(OrganizationsService).domainOwner(domain)).toBeUndefined();
  });

  it('auto: a person with a verified address in the domain joins at once as a member; others are refused', async () => {
    const t = await verifiedTeam('auto');
    const person = await personWithToken(api, { email: `ana-${Date.now()}@${t.domain.toUpperCase()}` });
    expect((await call('GET', '/api/orgs/joinable', person.token)).body).toEqual([{ slug: t.slug, name: 'Acme Sales', domain: t.domain, joinPolicy: 'auto', requested: false }]);

    const joined = await call('POST', `/api/orgs/${t.slug}/join`, person.token);
    expect(joined.status).toBe(200);
    expect(joined.body).toEqual({ status: 'member', slug: t.slug, name: 'Acme Sales', role: 'member' });
    expect((await call('GET', '/api/orgs', person.token)).body).toEqual([expect.objectContaining({ slug: t.slug, role: 'member' })]);
    expect((await call('GET', '/api/orgs/joinable', person.token)).body).toEqual([]);
    expect((await call('POST', `/api/orgs/${t.slug}/join`, person.token)).body).toMatchObject({ status: 'member', role: 'member' });
    expect(await authEvents(api, { type: 'org.member_add', userId: person.id })).toEqual([expect.objectContaining({ detail: expect.objectContaining({ via: `domain:${t.domain}`, role: 'member' }) })]);

    // An address not verified: 403, whatever the organization.
    const unverified = await personWithToken(api, { email: `unverified-${Date.now()}@${t.domain}`, emailVerified: false });
    const refused = await call('POST', `/api/orgs/${t.slug}/join`, unverified.token);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/confirm your e-mail address/i);
    expect((await call('GET', '/api/orgs/joinable', unverified.token)).body).toEqual([]);
    expect((await call('GET', `/api/orgs/${t.slug}`, unverified.token)).status).toBe(404);

    // Another domain, or no such organization: 404 alike.
    const elsewhere = await personWithToken(api);
    const notYours = await call('POST', `/api/orgs/${t.slug}/join`, elsewhere.token);
    expect(notYours.status).toBe(404);
    expect((await call('POST', `/api/orgs/no-such-org-${Date.now()}/join`, elsewhere.token)).status).toBe(404);
    expect((await call('GET', '/api/orgs/joinable', elsewhere.token)).body).toEqual([]);

    // A subdomain is another domain.
    const sub = await personWithToken(api, { email: `sub-${Date.now()}@mail.${t.domain}` });
    expect((await call('POST', `/api/orgs/${t.slug}/join`, sub.token)).status).toBe(404);
  });

  it('invite: people of the domain are told to ask for an invitation; an unverified domain lets nobody join', async () => {
    const t = await verifiedTeam('invite');
    const person = await personWithToken(api, { email: `bo-${Date.now()}@${t.domain}` });
    const refused = await call('POST', `/api/orgs/${t.slug}/join`, person.token);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toMatch(/by invitation only/);
    expect((await call('GET', '/api/orgs/joinable', person.token)).body).toEqual([]);

    const u = await team();
    const { domain } = await addDomain(u.slug, u.admin.token);
    expect((await call('PATCH', `/api/orgs/${u.slug}/domains/${domain}`, u.admin.token, { joinPolicy: 'auto' })).status).toBe(200);
    const claimant = await personWithToken(api, { email: `cy-${Date.now()}@${domain}` });
    expect((await call('POST', `/api/orgs/${u.slug}/join`, claimant.token)).status).toBe(404);
  });

  it('request: a person asks, an admin sees, approves or declines; an address that left the domain cannot join', async () => {
    const t = await verifiedTeam('request');
    const asker = await personWithToken(api, { email: `di-${Date.now()}@${t.domain}` });
    const asked = await call('POST', `/api/orgs/${t.slug}/join`, asker.token);
    expect(asked.status).toBe(200);
    expect(asked.body).toEqual({ status: 'requested', slug: t.slug, name: 'Acme Sales', role: null });
    expect((await call('POST', `/api/orgs/${t.slug}/join`, asker.token)).body.status).toBe('requested');
    expect((await call('GET', `/api/orgs/${t.slug}`, asker.token)).status).toBe(404);
    expect((await call('GET', '/api/orgs/joinable', asker.token)).body).toEqual([expect.objectContaining({ slug: t.slug, joinPolicy: 'request', requested: true })]);
    expect(await authEvents(api, { type: 'org.join_request', userId: asker.id })).toHaveLength(1);

    const decliner = await personWithToken(api, { email: `ed-${Date.now()}@${t.domain}` });
    const mover = await personWithToken(api, { email: `fa-${Date.now()}@${t.domain}` });
    for (const p of [decliner, mover]) expect((await call('POST', `/api/orgs/${t.slug}/join`, p.token)).body.status).toBe('requested');

    const list = await call('GET', `/api/orgs/${t.slug}/join-requests`, t.admin.token);
    expect(list.status).toBe(200);
    expect(list.body.map((r: { user: { id: string } }) => r.user.id)).toEqual([asker.id, decliner.id, mover.id]);
    expect(list.body[0]).toEqual({ user: { id: asker.id, email: asker.email, name: asker.name }, requestedAt: expect.any(String), valid: true });

    expect((await call('POST', `/api/orgs/${t.slug}/join-requests/${asker.id}/approve`, t.member.token)).status).toBe(403);
    expect((await call('POST', `/api/orgs/${t.slug}/join-requests/${asker.id}/approve`, t.admin.token)).status).toBe(204);
    expect((await call('GET', `/api/orgs/${t.slug}`, asker.token)).body).toMatchObject({ slug: t.slug, role: 'member' });
    expect((await call('POST', `/api/orgs/${t.slug}/join-requests/${asker.id}/approve`, t.admin.token)).status).toBe(404);

    expect((await call('DELETE', `/api/orgs/${t.slug}/join-requests/${decliner.id}`, t.admin.token)).status).toBe(204);
    expect((await call('GET', `/api/orgs/${t.slug}`, decliner.token)).status).toBe(404);
    expect((await call('DELETE', `/api/orgs/${t.slug}/join-requests/${decliner.id}`, t.admin.token)).status).toBe(404);

    // The mover's address leaves the domain (a mailed address-change link): the approval is refused and the request ends.
    const moveOut = (user: { id: string }, email: string) =>
      api.app.get(UnitOfWork).run((tx) => api.app.get(UsersService).setEmailFromLink(tx, user.id, email, new Date()));
    await moveOut(mover, `fa-${Date.now()}@elsewhere.example`);
    // Listed as no longer valid, and its page offers no Approve for it.
    expect((await call('GET', `/api/orgs/${t.slug}/join-requests`, t.admin.token)).body).toEqual([expect.objectContaining({ user: expect.objectContaining({ id: mover.id }), valid: false })]);
    const adminWeb = await signInAs(api, t.admin.email, 'correct horse battery');
    const shown = (await adminWeb.send('GET', `/orgs/${t.slug}/domains`)).text;
    expect(shown).toContain('No longer valid');
    expect(shown).not.toContain(`/domains/requests/${mover.id}/approve`);
    expect(shown).toContain(`/domains/requests/${mover.id}/decline`);
    const stale = await call('POST', `/api/orgs/${t.slug}/join-requests/${mover.id}/approve`, t.admin.token);
    expect(stale.status).toBe(409);
    expect(stale.body.message).toMatch(/no longer a verified one in a verified domain/);
    expect((await call('GET', `/api/orgs/${t.slug}`, mover.token)).status).toBe(404);
    expect((await call('GET', `/api/orgs/${t.slug}/join-requests`, t.admin.token)).body).toEqual([]);
    expect((await call('POST', `/api/orgs/${t.slug}/join`, mover.token)).status).toBe(404);

    // A member whose address leaves the domain stays a member (the admins' call).
    await moveOut(asker, `di-${Date.now()}@elsewhere.example`);
    expect((await call('GET', `/api/orgs/${t.slug}`, asker.token)).status).toBe(200);
    const decisions = (await authEvents(api, { typePrefix: 'org.join_request_', userId: t.admin.id })).map((e) => [e.type, e.detail?.memberId]);
    expect(decisions).toEqual([
      ['org.join_request_approve', asker.id],
      ['org.join_request_decline', decliner.id],
      ['org.join_request_decline', mover.id],
    ]);
  });

  it('request: a domain gone back to invitations only shows its requests as no longer valid, and approving one is refused and ends it', async () => {
    const t = await verifiedTeam('request');
    const asker = await personWithToken(api, { email: `gi-${Date.now()}@${t.domain}` });
    expect((await call('POST', `/api/orgs/${t.slug}/join`, asker.token)).body.status).toBe('requested');
    expect((await call('PATCH', `/api/orgs/${t.slug}/domains/${t.domain}`, t.admin.token, { joinPolicy: 'invite' })).status).toBe(200);

    expect((await call('GET', `/api/orgs/${t.slug}/join-requests`, t.admin.token)).body).toEqual([expect.objectContaining({ valid: false })]);
    const refused = await call('POST', `/api/orgs/${t.slug}/join-requests/${asker.id}/approve`, t.admin.token);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain(`${t.domain} takes people by invitation only now`);
    expect((await call('GET', `/api/orgs/${t.slug}`, asker.token)).status).toBe(404);
    expect((await call('GET', `/api/orgs/${t.slug}/join-requests`, t.admin.token)).body).toEqual([]);
    expect((await authEvents(api, { type: 'org.join_request_decline', userId: t.admin.id })).map((e) => e.detail)).toEqual([
      { memberId: asker.id, reason: 'domain_invitation_only', domain: t.domain },
    ]);
  });

  it('retention deletes old requests that can no longer be approved; valid ones wait for the admins however old', async () => {
    const t = await verifiedTeam('request');
    const stays = await personWithToken(api, { email: `ha-${Date.now()}@${t.domain}` });
    const leaves = await personWithToken(api, { email: `hb-${Date.now()}@${t.domain}` });
    for (const p of [stays, leaves]) expect((await call('POST', `/api/orgs/${t.slug}/join`, p.token)).body.status).toBe('requested');
    await api.app.get(UnitOfWork).run((tx) => api.app.get(UsersService).setEmailFromLink(tx, leaves.id, `hb-${Date.now()}@elsewhere.example`, new Date()));
    const purge = (before: Date) => api.app.get(UnitOfWork).run((tx) => api.app.get(OrganizationDomainsService).purgeStaleJoinRequests(tx, before, 1_000));
    const listed = async () => ((await call('GET', `/api/orgs/${t.slug}/join-requests`, t.admin.token)).body as Array<{ user: { id: string }; valid: boolean }>).map((r) => [r.user.id, r.valid]);

    await purge(new Date(Date.now() - 86_400_000)); // both made after it: kept
    expect(await listed()).toEqual([[stays.id, true], [leaves.id, false]]);
    await purge(new Date(Date.now() + 60_000));
    expect(await listed()).toEqual([[stays.id, true]]);
  });

  it('joinable is matched before an organization of that slug, and refused as a slug', async () => {
    const person = await personWithToken(api);
    expect((await call('GET', '/api/orgs/joinable', person.token)).status).toBe(200);
    const taken = await call('POST', '/api/orgs', person.token, { name: 'Joinable', slug: 'joinable' });
    expect(taken.status).toBe(400);
  });

  it('the page /orgs/{slug}/domains: admins add, copy the record, verify, set the policy, approve and remove; members and outsiders are refused', async () => {
    const t = await team();
    const page = `/orgs/${t.slug}/domains`;
    const web = await signInAs(api, t.admin.email, 'correct horse battery');
    const empty = await web.send('GET', page);
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('No domains yet.');
    expect(empty.text).toContain(`href="/orgs/${t.slug}"`);

    const domain = freshDomain();
    const added = await postFrom(web, page, page, { domain });
    expect(added.status).toBe(303);
    expect(added.location).toMatch(new RegExp(`^${page}\\?done=added#domain-`));
    const shown = await web.send('GET', page);
    // Handlebars writes "=" as "&#x3D;" in an attribute; the browser reads it back as "=".
    const token = /value="prospect-verification(?:=|&#x3D;)([A-Za-z0-9_-]{43})"/.exec(shown.text)?.[1];
    expect(token).toBeDefined();
    const record = `prospect-verification=${token}`;
    expect(shown.text).toContain('data-copy=');
    expect(shown.text).toContain(`Verify ${domain}`);

    const missing = await postFrom(web, page, `${page}/${domain}/verify`);
    expect(missing.status).toBe(409);
    expect(missing.text).toContain('does not exist in DNS (NXDOMAIN)');
    dns.zone.set(domain, [record]);
    expect((await postFrom(web, page, `${page}/${domain}/verify`)).status).toBe(303);
    expect((await web.send('GET', page)).text).toMatch(/<span class="badge">verified<\/span>/);

    expect((await postFrom(web, page, `${page}/${domain}`, { joinPolicy: 'request' })).status).toBe(303);
    const refusedEnforce = await postFrom(web, page, `${page}/${domain}`, { joinPolicy: 'request', enforceSso: 'on' });
    expect(refusedEnforce.status).toBe(409);
    expect(refusedEnforce.text).toContain('no enabled identity provider of its own');

    const asker = await personWithToken(api, { email: `gi-${Date.now()}@${domain}` });
    expect((await call('POST', `/api/orgs/${t.slug}/join`, asker.token)).body.status).toBe('requested');
    expect((await web.send('GET', page)).text).toContain(asker.email);
    expect((await postFrom(web, page, `${page}/requests/${asker.id}/approve`)).status).toBe(303);
    expect((await call('GET', `/api/orgs/${t.slug}`, asker.token)).body.role).toBe('member');

    expect((await postFrom(web, page, `${page}/${domain}/remove`)).status).toBe(303);
    expect((await web.send('GET', page)).text).toContain('No domains yet.');

    // A form without the CSRF token is refused before anything runs.
    expect((await web.send('POST', page, { domain: freshDomain() })).status).toBe(403);

    const asMember = await signInAs(api, t.member.email, 'correct horse battery');
    expect((await asMember.send('GET', page)).status).toBe(403);
    const outsider = await personWithToken(api);
    const asOutsider = await signInAs(api, outsider.email, 'correct horse battery');
    expect((await asOutsider.send('GET', page)).status).toBe(404);
    expect((await webClientless(page)).status).toBe(303);
  });

  it('the page in Chromium at desktop and phone width: add, copy the record, verify with the keyboard', async () => {
    const t = await team();
    const browser = await launchBrowser();
    try {
      for (const [label, viewport] of [['desktop', { width: 1280, height: 900 }], ['phone', { width: 390, height: 844 }]] as const) {
        const page = await browser.newPage({ viewport });
        await page.goto(`${api.baseUrl}/login?next=${encodeURIComponent(`/orgs/${t.slug}/domains`)}`);
        await page.getByLabel('E-mail').fill(t.admin.email);
        await page.getByLabel('Password').fill('correct horse battery');
        await Promise.all([page.waitForURL(/\/domains$/), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
        const domain = freshDomain();
        await page.getByLabel('Domain', { exact: true }).fill(domain);
        await Promise.all([page.waitForURL(/done=added/), page.getByLabel('Domain', { exact: true }).press('Enter')]);
        const record = await page.getByLabel('TXT record value').inputValue();
        expect(record).toMatch(/^prospect-verification=[A-Za-z0-9_-]{43}$/);
        expect(await page.getByRole('button', { name: 'Copy' }).isVisible()).toBe(true);
        expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
        await page.screenshot({ path: `${SCREENSHOTS}org-domains-added-${label}.png`, fullPage: true });

        dns.zone.set(domain, [record]);
        await page.getByRole('button', { name: `Verify ${domain}` }).focus();
        await Promise.all([page.waitForURL(/done=verified/), page.keyboard.press('Enter')]);
        await expect(page.getByRole('status').first().textContent()).resolves.toContain('Verified.');
        expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
        await page.screenshot({ path: `${SCREENSHOTS}org-domains-verified-${label}.png`, fullPage: true });
        await page.close();
      }
    } finally {
      await browser.close();
    }
  });

  /** The page without signing in: sent to sign in. */
  const webClientless = (path: string) => request(api, 'GET', path);

  describe('the resolver failing', () => {
    let silent: Socket;
    beforeAll(async () => {
      // A UDP port that reads queries and never answers.
      silent = createSocket('udp4');
      await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    });
    afterAll(() => new Promise<void>((resolve) => silent.close(() => resolve())));

    it('gives up at its deadline with a 503 that names what happened, deciding nothing', async () => {
      const lookup = new DomainTxtLookup(api.app.get(AppConfig).with({ dnsServers: [`127.0.0.1:${silent.address().port}`] }));
      const started = Date.now();
      const failure = await lookup.txt('example.com', 600).catch((err: unknown) => err);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(failure).toBeInstanceOf(ApiException);
      expect((failure as ApiException).getStatus()).toBe(503);
      expect(failure).toMatchObject({ code: 'service_unavailable', headers: { 'Retry-After': '30' } });
      expect((failure as Error).message).toMatch(/could not look up the TXT records of example\.com: the DNS server (gave no answer|timed out)/i);
    });
  });
});
