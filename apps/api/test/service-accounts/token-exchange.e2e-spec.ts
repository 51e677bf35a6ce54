import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ACCESS_TOKEN_TOKEN_TYPE, ID_TOKEN_TOKEN_TYPE, JWT_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT_TYPE } from '@prospect/contract';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { RetentionService } from '../../src/retention/retention.service.js';
import { ISSUER_KEYS_COOLDOWN_SECONDS } from '../../src/service-accounts/issuer-keys.js';
import { waitFor } from '../support/eventually.js';
import { authEvents } from '../support/fixtures.js';
import { request, type Target } from '../support/http.js';
import { addMember, personWithToken } from '../support/organization-fixtures.js';
import { startReplica, startTestApp, type TestApp } from '../support/test-app.js';
import { TestIssuer } from '../support/test-issuer.js';
import { createSecret, createServiceAccount, organizationWithOwner, secretPost, ShiftedClock } from './support.js';

const LOOPBACK_ISSUERS = { TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS: 'true' };

/** Workload identity federation (issue #45, item 4): RFC 8693 token exchange of a trusted issuer's JWT for a service account's token. */
describe('token exchange (workload identity federation)', () => {
  let api: TestApp;
  const clock = new ShiftedClock();
  const issuer = new TestIssuer();

  beforeAll(async () => {
    await issuer.start();
    await issuer.addKey('k1');
    // The test issuers listen on 127.0.0.1: a loopback issuer is refused without this (production's default).
    api = await startTestApp({ clock, env: LOOPBACK_ISSUERS });
  });
  afterAll(async () => {
    await api?.close();
    await issuer.close();
  });

  const me = (token: string) => request(api, 'GET', '/api/cli/auth/me', { token });
  const exchangeAt = (target: Target, clientId: string, subjectToken: string, extra: Record<string, string> = {}) =>
    request(target, 'POST', '/oauth/token', {
      body: new URLSearchParams({ grant_type: TOKEN_EXCHANGE_GRANT_TYPE, client_id: clientId, subject_token: subjectToken, subject_token_type: JWT_TOKEN_TYPE, ...extra }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
  const exchange = (clientId: string, subjectToken: string, extra: Record<string, string> = {}) => exchangeAt(api, clientId, subjectToken, extra);
  const federate = (slug: string, token: string, accountId: string, body: Record<string, unknown>) =>
    request(api, 'POST', `/api/orgs/${slug}/service-accounts/${accountId}/federations`, { json: body, token });

  /** An organization, its service account, and a federation trusting the test issuer for `acme/api` on main. */
  async function federatedAccount(conditions: Record<string, string> = { sub: 'repo:acme/api:*', repository: 'acme/api' }, scopes: Array<'profile' | 'orgs'> = ['profile', 'orgs']) {
    const { owner, slug } = await organizationWithOwner(api);
    const account = await createServiceAccount(api, slug, owner.token, scopes);
    const res = await federate(slug, owner.token, account.id, { issuer: issuer.url, conditions });
    expect(res.status).toBe(201);
    return { owner, slug, account, federation: res.body as { id: string; issuer: string; audience: string; conditions: Record<string, string> } };
  }

  /** The exchange's refusals of this account, by the condition the organization's log names. */
  const refusedConditions = async (accountId: string) =>
    (await authEvents(api, { type: 'org.service_account_exchange_refused', detail: { serviceAccountId: accountId } })).map((e) => e.detail.condition as string);

  /** A refusal as the caller sees it: invalid_grant, and not a word of which condition failed. */
  const expectOpaqueRefusal = (res: { status: number; body: any }) => {
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'invalid_grant', error_description: 'The subject_token is not accepted for this service account.' });
  };

  it('discovery lists the grant', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      expect((await request(api, 'GET', path)).body.grant_types_supported).toContain(TOKEN_EXCHANGE_GRANT_TYPE);
    }
  });

  it('admins trust an issuer: at least one condition, an https or loopback issuer, this service as the default audience; listed in the account', async () => {
    const { owner, slug, account, federation } = await federatedAccount();
    expect(federation).toEqual({ id: expect.any(String), issuer: issuer.url, audience: api.baseUrl, conditions: { sub: 'repo:acme/api:*', repository: 'acme/api' }, createdAt: expect.any(String) });
    const listed = await request(api, 'GET', `/api/orgs/${slug}/service-accounts/${account.id}/federations`, { token: owner.token });
    expect(listed.body).toEqual([federation]);
    expect((await request(api, 'GET', `/api/orgs/${slug}/service-accounts/${account.id}`, { token: owner.token })).body.federations).toEqual([federation]);

    for (const [body, says] of [
      [{ issuer: issuer.url, conditions: {} }, 'at least one condition'],
      // A condition in name only: `*` alone would trust every token of the issuer (any repository on github.com).
      [{ issuer: issuer.url, conditions: { sub: '*' } }, 'pins a value'],
      [{ issuer: issuer.url, conditions: { sub: '**', repository: '*' } }, 'pins a value'],
      [{ issuer: issuer.url }, 'conditions'],
      [{ issuer: 'http://ci.example.com', conditions: { sub: 'x' } }, 'https://'],
      [{ issuer: 'https://10.1.2.3', conditions: { sub: 'x' } }, 'private'],
      [{ issuer: 'https://169.254.169.254', conditions: { sub: 'x' } }, 'private'],
      [{ issuer: issuer.url, conditions: { aud: 'x' } }, 'audience'],
      [{ issuer: issuer.url, conditions: { 'no spaces': 'x' } }, 'claim name'],
    ] as const) {
      const res = await federate(slug, owner.token, account.id, body);
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).toContain(says);
    }
    // A member who is no admin may not; nor may another organization's owner.
    const member = await personWithToken(api);
    await addMember(api, slug, owner.id, member, 'member');
    expect((await federate(slug, member.token, account.id, { issuer: issuer.url, conditions: { sub: 'repo:acme/*' } })).status).toBe(403);
    expect((await request(api, 'DELETE', `/api/orgs/${slug}/service-accounts/${account.id}/federations/${federation.id}`, { token: member.token })).status).toBe(403);
    const other = await organizationWithOwner(api);
    const elsewhere = await federate(other.slug, other.owner.token, account.id, { issuer: issuer.url, conditions: { sub: 'repo:acme/*' } });
    expect(elsewhere.status).toBe(404);
    const logged = await authEvents(api, { type: 'org.service_account_federation_add', detail: { serviceAccountId: account.id } });
    expect(logged).toHaveLength(1);
  });

  it('exchanges a token of the trusted issuer whose claims match: an hour’s access token; /me shows the service account; the log has the external sub and the conditions met', async () => {
    const { slug, owner, account, federation } = await federatedAccount();
    const subjectToken = await issuer.sign({ aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' });
    const res = await exchange(account.clientId, subjectToken);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({ access_token: expect.stringMatching(/^prs_/), issued_token_type: ACCESS_TOKEN_TOKEN_TYPE, token_type: 'Bearer', expires_in: expect.any(Number), scope: 'profile orgs' });
    expect(res.body.expires_in).toBeGreaterThan(3500);
    expect(res.body.expires_in).toBeLessThanOrEqual(3600);
    expect(res.body.refresh_token).toBeUndefined();
    const who = await me(res.body.access_token);
    expect(who.status).toBe(200);
    expect(who.body).toMatchObject({ kind: 'service_account', user: { id: account.id, email: null }, organization: { slug } });

    const [logged] = await authEvents(api, { type: 'org.service_account_token_exchange', detail: { serviceAccountId: account.id } });
    expect(logged!.detail).toMatchObject({
      issuer: issuer.url,
      sub: 'repo:acme/api:ref:refs/heads/main',
      federationId: federation.id,
      conditions: JSON.stringify({ sub: 'repo:acme/api:*', repository: 'acme/api' }),
      matched: JSON.stringify({ sub: 'repo:acme/api:ref:refs/heads/main', repository: 'acme/api' }),
    });
    // The organization's public event stream has it too.
    await waitFor('the exchange in the organization’s event stream', async () => {
      const events = await request(api, 'GET', `/api/orgs/${slug}/events?types=service_account.token_exchanged`, { token: owner.token });
      return JSON.stringify(events.body).includes('repo:acme/api:ref:refs/heads/main');
    }, 30_000);

    // An ID token type is taken as well; a narrower scope; and an aud array holding ours.
    const asIdToken = await exchange(account.clientId, await issuer.sign({ aud: ['sts.amazonaws.com', api.baseUrl], sub: 'repo:acme/api:environment:prod' }), { subject_token_type: ID_TOKEN_TOKEN_TYPE, scope: 'profile' });
    expect(asIdToken.status).toBe(200);
    expect(asIdToken.body.scope).toBe('profile');
  });

  it('refuses a wrong audience, an expired token, one too old, one from the future, a sub outside the pattern, a bad signature, without saying which; the log does', async () => {
    const { account } = await federatedAccount();
    const sub = 'repo:acme/api:ref:refs/heads/main';
    const now = clock.now();
    const cases: Array<[string, Promise<string>]> = [
      ['audience', issuer.sign({ aud: 'https://someone-else.example', sub })],
      ['expired', issuer.sign({ aud: api.baseUrl, sub }, { issuedAt: new Date(now.getTime() - 600_000), expiresAt: new Date(now.getTime() - 60_000) })],
      ['too_old', issuer.sign({ aud: api.baseUrl, sub }, { issuedAt: new Date(now.getTime() - 2 * 3600_000), expiresAt: new Date(now.getTime() + 600_000) })],
      ['not_yet_valid', issuer.sign({ aud: api.baseUrl, sub }, { issuedAt: new Date(now.getTime() + 600_000) })],
      ['claim:sub', issuer.sign({ aud: api.baseUrl, sub: 'repo:acme-evil/api:ref:refs/heads/main' })],
      ['claim:repository', issuer.sign({ aud: api.baseUrl, sub, repository: 'acme/api-fork' })],
    ];
    for (const [, token] of cases) expectOpaqueRefusal(await exchange(account.clientId, await token));
    // A valid token's payload with another signature.
    const [header, payload] = (await issuer.sign({ aud: api.baseUrl, sub })).split('.');
    const forgedSignature = (await issuer.sign({ aud: api.baseUrl, sub: 'other' })).split('.')[2];
    expectOpaqueRefusal(await exchange(account.clientId, `${header}.${payload}.${forgedSignature}`));
    expectOpaqueRefusal(await exchange(account.clientId, 'not-a-jwt'));
    expect(await refusedConditions(account.id)).toEqual([...cases.map(([condition]) => condition), 'signature', 'not_a_jwt']);
  });

  it('an attacker’s tokens: alg none, HS256 keyed with the JWKS, another issuer’s key under the same kid, no exp, nbf ahead, claims that are arrays, objects or another case', async () => {
    const { account } = await federatedAccount();
    const sub = 'repo:acme/api:ref:refs/heads/main';
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const nowSeconds = Math.floor(clock.now().getTime() / 1000);
    const claims = { iss: issuer.url, aud: api.baseUrl, sub, repository: 'acme/api', iat: nowSeconds, exp: nowSeconds + 300 };
    // Another issuer with a key of the same kid, signing a token that names ours.
    const impostor = new TestIssuer();
    await impostor.addKey('k1', false);
    const published = JSON.stringify(issuer.keys.get('k1')!.jwk);
    const cases: Array<[string, string]> = [
      ['algorithm', `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, jti: randomUUID() })}.`],
      ['algorithm', await new SignJWT({ ...claims, jti: randomUUID() }).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).sign(new TextEncoder().encode(published))],
      ['signature', await new SignJWT({ ...claims, jti: randomUUID() }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(impostor.keys.get('k1')!.privateKey)],
      ['missing_claim:exp', await new SignJWT({ ...claims, exp: undefined, jti: randomUUID() }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(issuer.keys.get('k1')!.privateKey)],
      ['missing_claim:jti', await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).sign(issuer.keys.get('k1')!.privateKey)],
      ['not_yet_valid', await issuer.sign({ aud: api.baseUrl, sub, nbf: nowSeconds + 600 })],
      ['audience', await issuer.sign({ aud: ['https://someone-else.example', `${api.baseUrl}/`], sub })],
      ['claim:sub', await issuer.sign({ aud: api.baseUrl, sub: [sub] })],
      ['claim:sub', await issuer.sign({ aud: api.baseUrl, sub: { toString: sub } })],
      ['claim:repository', await issuer.sign({ aud: api.baseUrl, sub, repository: ['acme/api', 'evil/x'] })],
      ['claim:repository', await issuer.sign({ aud: api.baseUrl, sub, repository: 'ACME/api' })],
      // A lookalike: Cyrillic а in acme.
      ['claim:repository', await issuer.sign({ aud: api.baseUrl, sub, repository: '\u0430cme/api' })],
      // Text Postgres cannot store (a NUL, an unpaired surrogate), in a claim or the issuer: refused, never a 500.
      ['malformed', await issuer.sign({ aud: api.baseUrl, sub: 'repo:acme/api\u0000:ref:refs/heads/main' })],
      ['malformed', await issuer.sign({ aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/\ud800' })],
      // A long sub, clipped for the log through an emoji's surrogate pair.
      ['claim:sub', await issuer.sign({ aud: api.baseUrl, sub: `${'x'.repeat(299)}😀` })],
      ['malformed', `${b64({ alg: 'ES256', kid: 'k1' })}.${b64({ ...claims, iss: `${issuer.url}\u0000`, jti: randomUUID() })}.c2ln`],
    ];
    const answers = [];
    for (const [condition, token] of cases) answers.push([condition, (await exchange(account.clientId, token)).body]);
    // Each refused as any other: invalid_grant, never a 500.
    expect(answers).toEqual(cases.map(([condition]) => [condition, expect.objectContaining({ error: 'invalid_grant', error_description: 'The subject_token is not accepted for this service account.' })]));
    expect(await refusedConditions(account.id)).toEqual(cases.map(([condition]) => condition));
    // The real thing still goes through.
    expect((await exchange(account.clientId, await issuer.sign({ aud: api.baseUrl, sub }))).status).toBe(200);
  });

  it('a hostile issuer: a redirect is not followed, a JWKS over a megabyte and a discovery that never ends are refused, and a failure is not fetched again within the cooldown', async () => {
    let redirectTargetHits = 0;
    const hits = new Map<string, number>();
    const hostile = createServer((req, res) => {
      const path = req.url ?? '';
      hits.set(path.split('/')[1]!, (hits.get(path.split('/')[1]!) ?? 0) + 1);
      const base = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
      if (path === '/target') {
        redirectTargetHits++;
        res.end('{}');
      } else if (path === '/redirect/.well-known/openid-configuration') {
        res.writeHead(302, { location: `${base}/target` }).end();
      } else if (path === '/huge/.well-known/openid-configuration') {
        res.end(JSON.stringify({ issuer: `${base}/huge`, jwks_uri: `${base}/huge/jwks` }));
      } else if (path === '/huge/jwks') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`{"keys":[],"pad":"${'x'.repeat(2 * 1024 * 1024)}"}`);
      } else if (path === '/slow/.well-known/openid-configuration') {
        // Headers at once, then a byte now and then, forever.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{');
        const drip = setInterval(() => res.write(' '), 500);
        res.on('close', () => clearInterval(drip));
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
    try {
      for (const name of ['redirect', 'huge', 'slow']) {
        const { account, slug, owner } = await federatedAccount();
        expect((await federate(slug, owner.token, account.id, { issuer: `${base}/${name}`, conditions: { sub: 'x' } })).status).toBe(201);
        // Signed by the test issuer's key, naming the hostile one: the keys are asked for before the signature is looked at.
        const nowSeconds = Math.floor(clock.now().getTime() / 1000);
        const token = () =>
          new SignJWT({ iss: `${base}/${name}`, aud: api.baseUrl, sub: 'x', jti: randomUUID(), iat: nowSeconds, exp: nowSeconds + 300 })
            .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
            .sign(issuer.keys.get('k1')!.privateKey);
        const started = Date.now();
        expectOpaqueRefusal(await exchange(account.clientId, await token()));
        // The fetch gives up (5 s) well before the test would.
        expect(Date.now() - started).toBeLessThan(15_000);
        const fetched = hits.get(name);
        // Within the cooldown a failed issuer is not asked again, however many tokens name it.
        for (let i = 0; i < 3; i++) expectOpaqueRefusal(await exchange(account.clientId, await token()));
        expect(hits.get(name)).toBe(fetched);
        expect(await refusedConditions(account.id)).toEqual(Array(4).fill('issuer_unavailable'));
      }
      expect(redirectTargetHits).toBe(0);
    } finally {
      hostile.closeAllConnections();
      await new Promise((resolve) => hostile.close(resolve));
    }
  });

  it('a jti is exchanged once: a replay is refused, and of two at once exactly one wins', async () => {
    const { account } = await federatedAccount();
    const subjectToken = await issuer.sign({ aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' });
    expect((await exchange(account.clientId, subjectToken)).status).toBe(200);
    expectOpaqueRefusal(await exchange(account.clientId, subjectToken));

    const racing = await issuer.sign({ aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' });
    const answers = await Promise.all(Array.from({ length: 6 }, () => exchange(account.clientId, racing)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400, 400, 400, 400]);
    expect(await refusedConditions(account.id)).toEqual(Array(6).fill('jti_replayed'));
  });

  it('a jti is shared by the replicas: the same token on two at once, exactly one wins', async () => {
    const { account } = await federatedAccount();
    const replica = await startReplica(api, undefined, LOOPBACK_ISSUERS);
    try {
      for (let round = 0; round < 3; round++) {
        const subjectToken = await issuer.sign({ aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' });
        const answers = await Promise.all([api, replica.target, api, replica.target].map((target) => exchangeAt(target, account.clientId, subjectToken)));
        expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400, 400]);
      }
    } finally {
      await replica.close();
    }
  });

  it('deleting the federation while exchanges run: every token it let through ends', async () => {
    const { owner, slug, account, federation } = await federatedAccount();
    const claims = { aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' };
    const tokens = await Promise.all(Array.from({ length: 8 }, () => issuer.sign(claims)));
    const [deleted, ...answers] = await Promise.all([
      request(api, 'DELETE', `/api/orgs/${slug}/service-accounts/${account.id}/federations/${federation.id}`, { token: owner.token }),
      ...tokens.map((t) => exchange(account.clientId, t)),
    ]);
    expect(deleted!.status).toBe(204);
    for (const answer of answers) {
      if (answer.status === 200) expect((await me(answer.body.access_token)).status).toBe(401);
      else expectOpaqueRefusal(answer);
    }
  });

  it('an unknown kid makes one JWKS refresh, no more than one per cooldown; a rotated key is taken once published', async () => {
    const { account } = await federatedAccount();
    const claims = { aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' };
    expect((await exchange(account.clientId, await issuer.sign(claims))).status).toBe(200);
    clock.advanceSeconds(ISSUER_KEYS_COOLDOWN_SECONDS + 1);

    await issuer.addKey('unpublished', false);
    const before = issuer.jwksFetches;
    expectOpaqueRefusal(await exchange(account.clientId, await issuer.sign(claims, { kid: 'unpublished' })));
    expect(issuer.jwksFetches).toBe(before + 1);
    // Within the cooldown, made-up kids fetch nothing.
    for (let i = 0; i < 3; i++) expectOpaqueRefusal(await exchange(account.clientId, await issuer.sign(claims, { kid: 'unpublished' })));
    expect(issuer.jwksFetches).toBe(before + 1);
    expect(await refusedConditions(account.id)).toEqual(Array(4).fill('unknown_kid'));

    // The issuer rotates: the new key is published, and taken after the cooldown.
    await issuer.addKey('k2');
    clock.advanceSeconds(ISSUER_KEYS_COOLDOWN_SECONDS + 1);
    expect((await exchange(account.clientId, await issuer.sign(claims, { kid: 'k2' }))).status).toBe(200);
    expect(issuer.jwksFetches).toBe(before + 2);
  });

  it('an issuer trusted by another organization’s service account is not trusted for this one', async () => {
    const theirs = await federatedAccount({ sub: 'repo:acme/*' });
    const { owner, slug } = await organizationWithOwner(api);
    const ours = await createServiceAccount(api, slug, owner.token);
    const subjectToken = await issuer.sign({ aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' });
    expectOpaqueRefusal(await exchange(ours.clientId, subjectToken));
    expect(await refusedConditions(ours.id)).toEqual(['issuer']);
    // The token was not spent by the refusal: its own account takes it.
    expect((await exchange(theirs.account.clientId, subjectToken)).status).toBe(200);
    expect(await refusedConditions(theirs.account.id)).toEqual([]);
  });

  it('a disabled account is invalid_client; a scope beyond the account’s is invalid_scope; an unknown client_id is invalid_client', async () => {
    const { owner, slug, account } = await federatedAccount(undefined, ['profile']);
    const claims = { aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' };
    const beyond = await exchange(account.clientId, await issuer.sign(claims), { scope: 'profile orgs' });
    expect(beyond.status).toBe(400);
    expect(beyond.body).toMatchObject({ error: 'invalid_scope' });

    expect((await request(api, 'PATCH', `/api/orgs/${slug}/service-accounts/${account.id}`, { json: { disabled: true }, token: owner.token })).status).toBe(200);
    const disabled = await exchange(account.clientId, await issuer.sign(claims));
    expect(disabled.status).toBe(400);
    expect(disabled.body).toMatchObject({ error: 'invalid_client' });
    expect(await refusedConditions(account.id)).toEqual(['account_disabled']);

    expect((await exchange('psa_nobody', await issuer.sign(claims))).body).toMatchObject({ error: 'invalid_client' });
  });

  it('the exchanged token ends when the federation is deleted, the account disabled or a scope removed', async () => {
    const { owner, slug, account, federation } = await federatedAccount();
    const claims = { aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' };
    const token = (await exchange(account.clientId, await issuer.sign(claims))).body.access_token as string;
    expect((await me(token)).status).toBe(200);
    expect((await request(api, 'DELETE', `/api/orgs/${slug}/service-accounts/${account.id}/federations/${federation.id}`, { token: owner.token })).status).toBe(204);
    expect((await me(token)).status).toBe(401);
    // Its issuer is trusted no more.
    expectOpaqueRefusal(await exchange(account.clientId, await issuer.sign(claims)));
    expect(await refusedConditions(account.id)).toEqual(['issuer']);
    expect(await authEvents(api, { type: 'org.service_account_federation_delete', detail: { serviceAccountId: account.id, federationId: federation.id } })).toHaveLength(1);

    const again = await federate(slug, owner.token, account.id, { issuer: issuer.url, conditions: { repository: 'acme/api' } });
    expect(again.status).toBe(201);
    const narrowed = (await exchange(account.clientId, await issuer.sign(claims))).body.access_token as string;
    expect((await request(api, 'PATCH', `/api/orgs/${slug}/service-accounts/${account.id}`, { json: { scopes: ['profile'] }, token: owner.token })).status).toBe(200);
    expect((await me(narrowed)).status).toBe(401);

    const beforeDisable = (await exchange(account.clientId, await issuer.sign(claims))).body.access_token as string;
    expect((await me(beforeDisable)).status).toBe(200);
    expect((await request(api, 'PATCH', `/api/orgs/${slug}/service-accounts/${account.id}`, { json: { disabled: true }, token: owner.token })).status).toBe(200);
    expect((await me(beforeDisable)).status).toBe(401);
  });

  it('deleting a federation ends the tokens exchanged through it, and only those: a secret’s, a key’s and another federation’s stay; the log counts them', async () => {
    const { owner, slug, account, federation } = await federatedAccount();
    const claims = { aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' };
    const through = [];
    for (let i = 0; i < 2; i++) through.push((await exchange(account.clientId, await issuer.sign(claims))).body.access_token as string);
    // Another federation of the same account (another audience of the same issuer) and its token.
    const other = await federate(slug, owner.token, account.id, { issuer: issuer.url, audience: 'https://ci.acme.example', conditions: { repository: 'acme/api' } });
    expect(other.status).toBe(201);
    const throughOther = (await exchange(account.clientId, await issuer.sign({ ...claims, aud: 'https://ci.acme.example' }))).body.access_token as string;
    // A client secret's token and a private_key_jwt one: no federation made them.
    const secret = await createSecret(api, slug, owner.token, account.id);
    const bySecret = (await secretPost(api, account.clientId, secret.clientSecret)).body.access_token as string;
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    expect((await request(api, 'POST', `/api/orgs/${slug}/service-accounts/${account.id}/keys`, { json: { jwk: { ...(await exportJWK(publicKey)), kid: 'ci-1' } }, token: owner.token })).status).toBe(201);
    const assertion = await new SignJWT({ jti: randomUUID(), iss: account.clientId, sub: account.clientId, aud: `${api.baseUrl}/oauth/token` })
      .setProtectedHeader({ alg: 'ES256', kid: 'ci-1' })
      .setIssuedAt(clock.now())
      .setExpirationTime(new Date(clock.now().getTime() + 60_000))
      .sign(privateKey);
    const byKey = await request(api, 'POST', '/oauth/token', {
      body: new URLSearchParams({ grant_type: 'client_credentials', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(byKey.status).toBe(200);
    for (const token of [...through, throughOther, bySecret, byKey.body.access_token]) expect((await me(token)).status).toBe(200);

    expect((await request(api, 'DELETE', `/api/orgs/${slug}/service-accounts/${account.id}/federations/${federation.id}`, { token: owner.token })).status).toBe(204);
    for (const token of through) expect((await me(token)).status).toBe(401);
    for (const token of [throughOther, bySecret, byKey.body.access_token]) expect((await me(token)).status).toBe(200);
    const [logged] = await authEvents(api, { type: 'org.service_account_federation_delete', detail: { serviceAccountId: account.id, federationId: federation.id } });
    expect(logged!.detail).toMatchObject({ issuer: issuer.url, tokens: 2 });
  });

  it('a loopback issuer only with TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS=true: without it, a clear 400 at registration, and one registered before is not asked for its keys', async () => {
    const local = new TestIssuer();
    await local.start();
    await local.addKey('k1');
    const { owner, slug, account } = await federatedAccount();
    expect((await federate(slug, owner.token, account.id, { issuer: local.url, conditions: { repository: 'acme/api' } })).status).toBe(201);
    // As production runs: the setting's default.
    Object.assign(api.config, { tokenExchangeAllowLoopbackIssuers: false });
    try {
      for (const loopback of [local.url, 'http://localhost:8080', 'https://[::1]/ci', 'https://127.0.0.2']) {
        const res = await federate(slug, owner.token, account.id, { issuer: loopback, conditions: { repository: 'acme/api' } });
        expect(res.status).toBe(400);
        expect(res.body.message).toMatch(/is a loopback address: a trusted issuer must be reachable on the internet, or set TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS=true/);
      }
      expectOpaqueRefusal(await exchange(account.clientId, await local.sign({ aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' })));
      expect(await refusedConditions(account.id)).toEqual(['issuer_unavailable']);
      expect(local.jwksFetches).toBe(0);
    } finally {
      Object.assign(api.config, { tokenExchangeAllowLoopbackIssuers: true });
      await local.close();
    }
  });

  it('refuses malformed requests with a clear invalid_request', async () => {
    const { account } = await federatedAccount();
    const subjectToken = await issuer.sign({ aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' });
    for (const extra of [
      { subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' },
      { requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' },
      { client_secret: 'prsa_x' },
      { actor_token: subjectToken, actor_token_type: JWT_TOKEN_TYPE },
    ] as Array<Record<string, string>>) {
      const res = await exchange(account.clientId, subjectToken, extra);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error: 'invalid_request' });
    }
    const missing = await request(api, 'POST', '/oauth/token', {
      body: new URLSearchParams({ grant_type: TOKEN_EXCHANGE_GRANT_TYPE, client_id: account.clientId }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'invalid_request' });
    // None of these spent the token.
    expect((await exchange(account.clientId, subjectToken)).status).toBe(200);
  });

  // Last: it moves the clock past every token signed so far.
  it('retention purges the recorded jtis once their tokens have expired', async () => {
    const { account } = await federatedAccount();
    const subjectToken = await issuer.sign({ aud: api.baseUrl, sub: 'repo:acme/api:ref:refs/heads/main' });
    expect((await exchange(account.clientId, subjectToken)).status).toBe(200);
    // sql-on-purpose: what the replay table holds at rest is what retention is for.
    const kept = async () => Number((await api.dataSource.query(`SELECT count(*) AS n FROM service_account_subject_tokens`))[0].n);
    expect(await kept()).toBeGreaterThan(0);
    clock.advanceSeconds(3 * 3600);
    await api.app.get(RetentionService).purge();
    expect(await kept()).toBe(0);
  });
});
