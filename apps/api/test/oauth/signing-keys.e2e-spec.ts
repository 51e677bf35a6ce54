import { OAUTH_ROUTES } from '@prospect/contract';
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';
import { ID_TOKEN_TTL_SECONDS, RETIRED_KEY_PUBLISHED_SECONDS, SIGNING_KEY_ROTATION_SECONDS, SigningKeys } from '../../src/server-secrets/signing-keys.js';
import { runApiProcess } from '../support/api-process.js';
import { FakeClock } from '../support/fake-clock.js';
import { createUser, registerClient } from '../support/fixtures.js';
import { hasServerSecret } from '../support/grant-fixtures.js';
import { get, type Target } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { signInAs } from '../support/web-client.js';
import { approveIn, authorizationParams, pkce, tokenRequest } from './code-flow-support.js';

const REDIRECT = 'https://tool.example.com/callback';

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

  /** An ID token from a real sign-in, its code exchanged on `exchangeOn`. */
  async function idToken(exchangeOn: Target = api): Promise<string> {
    const person = await createUser(api);
    const web = await signInAs(api, person.email, 'correct horse battery');
    const { verifier, challenge } = pkce();
    const back = await approveIn(web, authorizationParams('tool', REDIRECT, challenge, { nonce: 'n' }));
    const res = await tokenRequest(exchangeOn, { grant_type: 'authorization_code', client_id: 'tool', code: back.searchParams.get('code')!, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(res.status).toBe(200);
    return res.body.id_token as string;
  }
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

  it('rotates on its schedule: a key older than the rotation period is replaced at the next signature', async () => {
    const current = decodeProtectedHeader(await idToken()).kid;
    clock.advanceSeconds(SIGNING_KEY_ROTATION_SECONDS - 60);
    expect(decodeProtectedHeader(await idToken()).kid).toBe(current);
    clock.advanceSeconds(120);
    const rotated = decodeProtectedHeader(await idToken(replica)).kid;
    expect(rotated).not.toBe(current);
    expect(decodeProtectedHeader(await idToken(api)).kid).toBe(rotated);
    expect(await kids()).toEqual([current, rotated].sort());
  });

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
