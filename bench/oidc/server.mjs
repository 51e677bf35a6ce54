// The peer of `npm run bench`: node-oidc-provider 9 (Koa) with its device flow and userinfo,
// its state in Postgres (the same cluster and database as the API) through the small adapter
// below, a pool of 10 like every other server of the bench. At start it seeds what the loads
// need — an account's grant with TOKENS access tokens for userinfo, DEVICE_CODES pending device
// codes for its token endpoint, and SERVICE_CLIENTS confidential clients for the client
// credentials grant — writes them to SEED_OUT and only then answers /healthz.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import Provider from 'oidc-provider';
import pg from 'pg';

const env = process.env;
const port = Number(env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.POOL_SIZE ?? 10) });
export const CLIENT_ID = 'bench-cli';
const ACCOUNT = 'bench-user';

/**
 * oidc-provider's adapter interface on one table, one row per model instance; statements are
 * named (prepared once per connection), as the API and the floors send theirs.
 */
class PgAdapter {
  constructor(name) {
    this.name = name;
  }

  async upsert(id, payload, expiresIn) {
    await pool.query({
      name: 'oidc_upsert',
      text: `INSERT INTO oidc_payloads (id, type, payload, grant_id, user_code, uid, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))
             ON CONFLICT (id, type) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id,
               user_code = excluded.user_code, uid = excluded.uid, expires_at = excluded.expires_at`,
      values: [id, this.name, payload, payload.grantId ?? null, payload.userCode ?? null, payload.uid ?? null, expiresIn ?? 365 * 86400],
    });
  }

  async #findBy(column, value) {
    const { rows } = await pool.query({
      name: `oidc_find_by_${column}`,
      text: `SELECT payload FROM oidc_payloads WHERE ${column} = $1 AND type = $2 AND expires_at > now()`,
      values: [value, this.name],
    });
    return rows[0]?.payload;
  }

  find(id) {
    return this.#findBy('id', id);
  }

  findByUserCode(userCode) {
    return this.#findBy('user_code', userCode);
  }

  findByUid(uid) {
    return this.#findBy('uid', uid);
  }

  async consume(id) {
    await pool.query({
      name: 'oidc_consume',
      text: `UPDATE oidc_payloads SET payload = payload || jsonb_build_object('consumed', extract(epoch FROM now())::bigint) WHERE id = $1 AND type = $2`,
      values: [id, this.name],
    });
  }

  async destroy(id) {
    await pool.query({ name: 'oidc_destroy', text: `DELETE FROM oidc_payloads WHERE id = $1 AND type = $2`, values: [id, this.name] });
  }

  async revokeByGrantId(grantId) {
    await pool.query({ name: 'oidc_revoke_grant', text: `DELETE FROM oidc_payloads WHERE grant_id = $1`, values: [grantId] });
  }
}

await pool.query(`
  CREATE TABLE IF NOT EXISTS oidc_payloads (
    id text NOT NULL, type text NOT NULL, payload jsonb NOT NULL,
    grant_id text, user_code text, uid text, expires_at timestamptz NOT NULL,
    PRIMARY KEY (id, type))`);
await pool.query(`CREATE INDEX IF NOT EXISTS oidc_payloads_grant ON oidc_payloads (grant_id)`);
await pool.query(`CREATE INDEX IF NOT EXISTS oidc_payloads_user_code ON oidc_payloads (user_code)`);
await pool.query(`CREATE INDEX IF NOT EXISTS oidc_payloads_uid ON oidc_payloads (uid)`);

// Confidential clients for the client credentials grant (client_secret_basic), as many as the
// API's service accounts in the same load, each with a secret as long as theirs.
const serviceClients = Array.from({ length: Number(env.SERVICE_CLIENTS ?? 64) }, (_, i) => ({ clientId: `bench-sa-${i}`, secret: randomBytes(32).toString('base64url') }));

const provider = new Provider(issuer, {
  adapter: PgAdapter,
  clients: [
    { client_id: CLIENT_ID, grant_types: ['urn:ietf:params:oauth:grant-type:device_code'], response_types: [], redirect_uris: [], token_endpoint_auth_method: 'none' },
    ...serviceClients.map(({ clientId, secret }) => ({
      client_id: clientId,
      client_secret: secret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
    })),
  ],
  features: { deviceFlow: { enabled: true }, devInteractions: { enabled: false }, clientCredentials: { enabled: true } },
  scopes: ['openid', 'email', 'profile'],
  claims: { openid: ['sub'], email: ['email'], profile: ['name'] },
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub, email: 'bench@example.com', name: 'Bench User' }) }),
  ttl: { AccessToken: 30 * 86400, DeviceCode: 3600, Grant: 30 * 86400 },
  // Quiet: the API's request log goes to a file; this one writes nothing per request.
  renderError: (ctx, out) => {
    ctx.type = 'json';
    ctx.body = out;
  },
});

let ready = false;
const handle = provider.callback();
const server = http.createServer((req, res) => {
  if (req.url === '/healthz') {
    res.writeHead(ready ? 200 : 503).end();
    return;
  }
  handle(req, res);
});
server.keepAliveTimeout = 65_000;
await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));

// ── seed ──────────────────────────────────────────────────────────────────────
const tokensWanted = Number(env.TOKENS ?? 10_000);
const codesWanted = Number(env.DEVICE_CODES ?? 60_000);
const grant = new provider.Grant({ accountId: ACCOUNT, clientId: CLIENT_ID });
grant.addOIDCScope('openid email profile');
const grantId = await grant.save();
const client = await provider.Client.find(CLIENT_ID);
const inChunks = async (count, make) => {
  const out = [];
  for (let i = 0; i < count; i += 100) out.push(...(await Promise.all(Array.from({ length: Math.min(100, count - i) }, make))));
  return out;
};
const tokens = await inChunks(tokensWanted, () => new provider.AccessToken({ accountId: ACCOUNT, client, grantId, scope: 'openid email profile', gty: 'device_code' }).save());
// Pending device codes the way a client gets them: its own device authorization endpoint.
const codes = await inChunks(codesWanted, async () => {
  const res = await fetch(`${issuer}/device/auth`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `client_id=${CLIENT_ID}&scope=openid` });
  if (!res.ok) throw new Error(`device authorization: ${res.status} ${await res.text()}`);
  return (await res.json()).device_code;
});
await pool.query('VACUUM ANALYZE oidc_payloads');
writeFileSync(env.SEED_OUT, JSON.stringify({ tokens, codes, serviceClients }));
ready = true;
process.on('SIGTERM', () => server.close(() => pool.end().then(() => process.exit(0))));
