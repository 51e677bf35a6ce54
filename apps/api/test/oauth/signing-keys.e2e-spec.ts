import { OAUTH_ROUTES } from '@prospect/contract';
import { createLocalJWKSet, createRemoteJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import {
  ID_TOKEN_TTL_SECONDS,
  NEXT_KEY_PUBLISHED_AHEAD_SECONDS,
  RETIRED_KEY_PUBLISHED_SECONDS,
  SIGNING_KEY_ROTATION_SECONDS,
  SigningKeys,
} from '../../src/server-secrets/signing-keys.js';
import { runApiProcess } from '../support/api-process.js';
import { FakeClock } from '../support/fake-clock.js';
import { createUser, registerClient } from '../support/fixtures.js';
import { hasServerSecret } from '../support/grant-fixtures.js';
import { get, type Target } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { createTestDatabase } from '../support/test-database.js';
import { signInAs } from '../support/web-client.js';
import { approveIn, authorizationParams, pkce, tokenRequest } from './code-flow-support.js';

const REDIRECT = 'https://tool.example.com/callback';

/** An ID token from a real sign-in on `api`, its code exchanged on `exchangeOn`. */
async function idTokenFrom(api: TestApp, exchangeOn: Target = api): Promise<string> {
  const person = await createUser(api);
  const web = await signInAs(api, person.email, 'correct horse battery');
  const { verifier, challenge } = pkce();
  const back = await approveIn(web, authorizationParams('tool', REDIRECT, challenge, { nonce: 'n' }));
  const res = await tokenRequest(exchangeOn, { grant_type: 'authorization_code', client_id: 'tool', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier });
  expect(res.status).toBe(200);
  return res.body.id_token as string;
}

/**
 * The ID tokens' signing keys (issue #33): sealed in `server_secrets` with a kid, the same on
 * every replica, rotated on a schedule or by `main.js rotate-keys`, a retired key published until
 * the ID tokens it signed have expired.
 */
describe('ID-token signing keys', () => {
  const clock = new FakeClock(Date.now());
  let api: TestApp;
  let replica: TestApp;

  beforeAll(async () => {
    api = await startTestApp({ clock });
    // A second replica on the same database: its own process state, the same Postgres and PUBLIC_URL (the issuer).
    replica = await startTestApp({ clock, database: api.database, env: { PUBLIC_URL: api.baseUrl } });
    await registerClient(api, { id: 'tool', name: 'Tool', allowedScopes: ['openid', 'profile', 'email'], redirectUris: [REDIRECT] });
  });
  afterAll(async () => {
    await replica?.close();
    await api?.close();
  });

  const idToken = (exchangeOn: Target = api) => idTokenFrom(api, exchangeOn);
  const jwks = async (on: Target = api): Promise<JSONWebKeySet> => (await get(on, OAUTH_ROUTES.jwks)).body;
  const kids = async (on: Target = api) => (await jwks(on)).keys.map((key) => key.kid).sort();
  /** Verified as a relying party would, against the JWKS as published now, at the test clock's time. */
  const verify = async (token: string, keySet?: JSONWebKeySet) =>
    jwtVerify(token, createLocalJWKSet(keySet ?? (await jwks())), { issuer: api.baseUrl, audience: 'tool', currentDate: clock.now() });

  it('every replica signs with the same key and serves the same JWKS, whose private halves are sealed', async () => {
    const signedHere = decodeProtectedHeader(await idToken(api));
    const signedThere = decodeProtectedHeader(await idToken(replica));
    expect(signedHere).toMatchObject({ alg: 'ES256', kid: expect.any(String) });
    expect(signedThere.kid).toBe(signedHere.kid);
    expect(await kids(replica)).toEqual(await kids(api));
    expect(await kids()).toEqual([signedHere.kid]);
    const [published] = (await jwks()).keys;
    expect(published).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig', kid: signedHere.kid });
    expect(published).not.toHaveProperty('d');
    // sql-on-purpose: the private half is stored only sealed
    const [stored] = await api.dataSource.query(`SELECT value FROM server_secrets WHERE name = $1`, [`id-token-key:${signedHere.kid}`]);
    expect(Object.keys(JSON.parse(stored.value)).sort()).toEqual(['alg', 'publicJwk', 'sealed']);
    expect(stored.value).not.toMatch(/"d"/);
  });

  it('after a rotation the new key signs everywhere; a token signed before verifies until it expires, and its key is then dropped', async () => {
    const before = await idToken();
    const oldKid = decodeProtectedHeader(before).kid!;
    const rotation = await api.app.get(SigningKeys).rotate();
    expect(rotation.stillPublished).toEqual([oldKid]);
    // The other replica signs with the new key at once: it reads the keys from the database.
    const after = await idToken(replica);
    expect(decodeProtectedHeader(after).kid).toBe(rotation.kid);
    expect(await kids(replica)).toEqual([oldKid, rotation.kid].sort());
    await verify(before);
    await verify(after);

    // Just before the old token expires it still verifies against what is published then.
    clock.advanceSeconds(ID_TOKEN_TTL_SECONDS - 5);
    await verify(before);
    clock.advanceSeconds(10);
    await expect(verify(before)).rejects.toMatchObject({ code: 'ERR_JWT_EXPIRED' });
    // Once nothing it signed can be valid, the old key is no longer published; the next rotation deletes it.
    clock.advanceSeconds(RETIRED_KEY_PUBLISHED_SECONDS - ID_TOKEN_TTL_SECONDS);
    expect(await kids()).toEqual([rotation.kid]);
    const next = await api.app.get(SigningKeys).rotate();
    expect(next.deleted).toEqual([oldKid]);
    expect(await hasServerSecret(api, `id-token-key:${oldKid}`)).toBe(false);
  });

  // Before the schedule's test: the command's process runs on the real clock, so the test clock must not be far past the newest key yet.
  it('`main.js rotate-keys` rotates from the command line, and the running replicas sign with its key', async () => {
    if (api.database.kind === 'embedded') return; // the embedded database belongs to this process
    const before = await kids();
    const run = await runApiProcess({ DATABASE_URL: api.database.url, LOG_LEVEL: 'warn' }, ['rotate-keys']);
    expect(run.code).toBe(0);
    const kid = /New ID-token signing key (\S+):/.exec(run.stdout)?.[1];
    expect(kid).toBeDefined();
    expect(await kids()).toEqual([...before, kid!].sort());
    expect(decodeProtectedHeader(await idToken(replica)).kid).toBe(kid);
  });

  it('rotates on its schedule: the next key is published a day before it signs, and the one it replaces stays until its tokens expire (issue #43, finding 9)', async () => {
    const current = decodeProtectedHeader(await idToken()).kid!;
    clock.advanceSeconds(SIGNING_KEY_ROTATION_SECONDS - NEXT_KEY_PUBLISHED_AHEAD_SECONDS - 60);
    expect(decodeProtectedHeader(await idToken()).kid).toBe(current);
    expect(await kids()).toEqual([current]);
    // Within a day of the rotation: the next key is made and published, on every replica, but does not sign yet.
    clock.advanceSeconds(120);
    expect(decodeProtectedHeader(await idToken(replica)).kid).toBe(current);
    const published = await kids(api);
    expect(published).toHaveLength(2);
    expect(await kids(replica)).toEqual(published);
    const next = published.find((kid) => kid !== current)!;
    // A relying party that fetched the JWKS now and keeps it (as jose's remote key set does)…
    const cachedByVerifier = await jwks();
    clock.advanceSeconds(NEXT_KEY_PUBLISHED_AHEAD_SECONDS - 30);
    const lastOfCurrent = await idToken(replica);
    expect(decodeProtectedHeader(lastOfCurrent).kid).toBe(current);
    clock.advanceSeconds(60);
    // …verifies the first token of the next key, which it had before that key signed.
    const firstOfNext = await idToken(replica);
    expect(decodeProtectedHeader(firstOfNext).kid).toBe(next);
    expect(decodeProtectedHeader(await idToken(api)).kid).toBe(next);
    await verify(firstOfNext, cachedByVerifier);
    expect(await kids()).toEqual([current, next].sort());
    // The replaced key stays published until the last token it signed has expired (signed 60 s ago), then goes.
    clock.advanceSeconds(ID_TOKEN_TTL_SECONDS - 65);
    await verify(lastOfCurrent);
    clock.advanceSeconds(RETIRED_KEY_PUBLISHED_SECONDS - ID_TOKEN_TTL_SECONDS + 30);
    expect(await kids()).toEqual([current, next].sort());
    clock.advanceSeconds(10);
    expect(await kids()).toEqual([next]);
  });
});

describe('the signing key of a fresh deployment (issue #43, finding 9)', () => {
  it('exists from the first start, one for replicas that start at once: a relying party that fetched the JWKS before any sign-in verifies the first ID token', async () => {
    const database = await createTestDatabase();
    // Two replicas starting together on an empty database: one makes the key, the other finds it.
    const [first, second] = await Promise.all([startTestApp({ database }), startTestApp({ database })]);
    try {
      await registerClient(first, { id: 'tool', name: 'Tool', allowedScopes: ['openid', 'profile', 'email'], redirectUris: [REDIRECT] });
      const atStart = (await get(first, OAUTH_ROUTES.jwks)).body as JSONWebKeySet;
      expect(atStart.keys).toHaveLength(1);
      expect((await get(second, OAUTH_ROUTES.jwks)).body).toEqual(atStart);
      // jose's remote key set, fetched at the relying party's start: it refetches an unknown kid only after a 30 s cooldown.
      const remote = createRemoteJWKSet(new URL(first.baseUrl + OAUTH_ROUTES.jwks));
      await remote.reload();
      const token = await idTokenFrom(first);
      expect(decodeProtectedHeader(token).kid).toBe(atStart.keys[0]!.kid);
      await jwtVerify(token, remote, { issuer: first.baseUrl, audience: 'tool' });
    } finally {
      await second.close();
      await first.close();
      await database.drop();
    }
  });
});

// Last in the file: passport's strategies are process-wide, and the last app started registers them.
describe('ID-token signing keys on the embedded database', () => {
  it('makes its first key on the embedded database, whose pool has one connection: no transaction waits on a connection of its own', async () => {
    const embedded = await startEmbeddedPostgres('memory://');
    const lone = await startTestApp({ database: { url: embedded.url, kind: 'embedded', drop: () => embedded.stop() } });
    try {
      // Its sealing secret is made too: read before the key's transaction, not inside it (where it waited DATABASE_TIMEOUT_MS, then a 503).
      const key = await lone.app.get(SigningKeys).current();
      expect(key.kid).toEqual(expect.any(String));
    } finally {
      await lone.close();
      await embedded.stop();
    }
  });
});
