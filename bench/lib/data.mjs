// What the benchmarks send: the seeded data (a user, access tokens, pending device logins,
// written directly with pg) and the three loaded requests. Shared by bench/run.mjs and
// bench/soak.mjs.
import { createHash, randomBytes } from 'node:crypto';

const sha256hex = (s) => createHash('sha256').update(s).digest('hex');
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';

/**
 * 1 user, `tokens` access tokens (only their SHA-256 stored; the raw tokens are returned) and
 * `deviceCodes` pending device logins expiring after `deviceLoginTtlS` seconds.
 */
/**
 * @param tokenScope the seeded tokens' scope; null (the default) is a token made directly, which has
 *   the CLI's scopes, `orgs` included, so every `/me` lists organizations.
 */
export async function seed(db, { tokens: tokenCount, deviceCodes: codeCount, deviceLoginTtlS = 3600, tokenScope = null }) {
  const tokens = Array.from({ length: tokenCount }, () => `prs_${randomBytes(32).toString('base64url')}`);
  const codes = Array.from({ length: codeCount }, () => `prsd_${randomBytes(32).toString('base64url')}`);
  const userCodes = new Set();
  while (userCodes.size < codes.length) {
    const bytes = randomBytes(8);
    let c = '';
    for (const b of bytes) c += USER_CODE_ALPHABET[b % 20]; // bias is irrelevant here
    userCodes.add(c);
  }
  const [{ id: userId }] = (
    await db.query(`INSERT INTO users (email, name, role) VALUES ('bench@example.com', 'Bench User', 'user') RETURNING id`)
  ).rows;
  await db.query(
    `INSERT INTO access_tokens (token_hash, user_id, origin, label, scope, created_at, expires_at)
     SELECT decode(h, 'hex'), $1, 'direct', 'bench', $3, now(), now() + interval '30 days' FROM unnest($2::text[]) AS h`,
    [userId, tokens.map(sha256hex), tokenScope],
  );
  await db.query(
    `INSERT INTO device_logins (device_code_hash, user_code, client_name, hostname, requested_ip, created_at, expires_at)
     SELECT decode(h, 'hex'), c, 'prospect-bench', 'bench-host', '127.0.0.1', now(), now() + make_interval(secs => $3)
       FROM unnest($1::text[], $2::text[]) AS x(h, c)`,
    [codes.map(sha256hex), [...userCodes], deviceLoginTtlS],
  );
  await db.query('VACUUM ANALYZE users, access_tokens, device_logins');
  return { tokens, codes };
}

/**
 * `count` service accounts of one organization (issue #45), each with one client secret (only its
 * SHA-256 stored, as the API stores it; the secrets are returned) and the scopes `profile orgs`:
 * the client credentials load rotates over them, as a team's jobs would (every authentication is
 * counted per address before it is checked, and given back when it succeeds).
 */
export async function seedServiceAccounts(db, { count }) {
  const [{ id: organizationId }] = (await db.query(`INSERT INTO organizations (slug, name, created_at) VALUES ('bench-org', 'Bench Org', now()) RETURNING id`)).rows;
  const accounts = [];
  for (let i = 0; i < count; i++) {
    const clientId = `psa_${randomBytes(12).toString('base64url')}`;
    const secret = `prsa_${randomBytes(32).toString('base64url')}`;
    const [{ id }] = (await db.query(`INSERT INTO users (email, name, role, kind) VALUES (NULL, $1, 'user', 'service_account') RETURNING id`, [`bench robot ${i}`])).rows;
    await db.query(
      `INSERT INTO service_accounts (id, organization_id, client_id, name, scopes, created_at, updated_at) VALUES ($1, $2, $3, $4, 'profile orgs', now(), now())`,
      [id, organizationId, clientId, `bench robot ${i}`],
    );
    await db.query(`INSERT INTO service_account_secrets (service_account_id, secret_hash, created_at) VALUES ($1, decode($2, 'hex'), now())`, [id, sha256hex(secret)]);
    accounts.push({ clientId, secret });
  }
  await db.query('VACUUM ANALYZE users, service_accounts, service_account_secrets');
  return accounts;
}

/** RFC 6749 §2.3.1 client_secret_basic: the form-encoded ID and secret, base64 of `id:secret`. */
export const basicAuthorization = ({ clientId, secret }) => `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const CLIENT_CREDENTIALS_BODY = 'grant_type=client_credentials';

/** The client credentials grant with client_secret_basic, each request as the next client of `clients` (the same load for the API and oidc-provider). */
function clientCredentialsLoad(label, path, clients) {
  const headers = clients.map((client) => ({ 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuthorization(client) }));
  let i = 0;
  return { label, request: { method: 'POST', path, body: CLIENT_CREDENTIALS_BODY, setupRequest: (req) => ({ ...req, headers: headers[i++ % headers.length] }) } };
}

export const START_BODY = JSON.stringify({ clientName: 'prospect-bench', hostname: 'bench-host' });
export const JSON_HEADERS = { 'content-type': 'application/json' };
export const ROUTES = {
  me: 'GET /api/cli/auth/me',
  poll: 'POST /api/cli/auth/device/poll',
  start: 'POST /api/cli/auth/device/start',
  cc: 'POST /oauth/token (client_credentials)',
};

/**
 * autocannon request definitions for the three endpoints. `/me` sends the next of the tokens
 * each time, `poll` the next of the device codes: the counters live here, outside any one
 * run, so a code is polled again only after every other one was.
 */
export function loads({ tokens, codes, serviceAccounts = [] }) {
  let t = 0;
  let c = 0;
  return {
    me: {
      label: ROUTES.me,
      request: {
        method: 'GET',
        path: '/api/cli/auth/me',
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${tokens[t++ % tokens.length]}` } }),
      },
    },
    poll: {
      label: ROUTES.poll,
      request: {
        method: 'POST',
        path: '/api/cli/auth/device/poll',
        headers: JSON_HEADERS,
        setupRequest: (req) => ({ ...req, body: `{"deviceCode":"${codes[c++ % codes.length]}"}` }),
      },
    },
    start: {
      label: ROUTES.start,
      request: { method: 'POST', path: '/api/cli/auth/device/start', headers: JSON_HEADERS, body: START_BODY },
    },
    cc: clientCredentialsLoad(ROUTES.cc, '/oauth/token', serviceAccounts),
  };
}

/** The peer's routes for the same three requests (bench/oidc): userinfo, its token endpoint with a pending device code, device authorization. */
export const OIDC_ROUTES = { me: 'GET /me (userinfo)', poll: 'POST /token (device_code, pending)', start: 'POST /device/auth', cc: 'POST /token (client_credentials)' };
const FORM_HEADERS = { 'content-type': 'application/x-www-form-urlencoded' };

/** autocannon requests for oidc-provider, rotating over its own seeded tokens and device codes. */
export function oidcLoads({ tokens, codes, serviceClients = [] }, clientId) {
  let t = 0;
  let c = 0;
  return {
    me: {
      label: OIDC_ROUTES.me,
      request: { method: 'GET', path: '/me', setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${tokens[t++ % tokens.length]}` } }) },
    },
    poll: {
      label: OIDC_ROUTES.poll,
      request: {
        method: 'POST',
        path: '/token',
        headers: FORM_HEADERS,
        setupRequest: (req) => ({ ...req, body: `grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code&client_id=${clientId}&device_code=${codes[c++ % codes.length]}` }),
      },
    },
    start: { label: OIDC_ROUTES.start, request: { method: 'POST', path: '/device/auth', headers: FORM_HEADERS, body: `client_id=${clientId}&scope=openid` } },
    cc: clientCredentialsLoad(OIDC_ROUTES.cc, '/token', serviceClients),
  };
}
