// What both floors share, so that they cannot drift apart: the configuration
// from the environment, the pg pool, the SQL (sent as the same named prepared
// statements) and the work around it for the three benchmarked endpoints, which
// per request runs exactly the SQL the API runs on the same path
// (apps/api/src/tokens/tokens.service.ts `verify`, apps/api/src/device-login/
// device-login.service.ts `start` and `poll`, apps/api/src/audit/audit.service.ts).
//
// Nothing here touches HTTP. The answers are plain `{ status, body, headers }`;
// bench/floor/server.mjs writes them with node:http, bench/floor-stack writes
// them through Nest on Express.
//
// Env: PORT (default given by the server), HOST (127.0.0.1), DATABASE_URL
// (required), POOL_SIZE (10, as the API with DATABASE_URL),
// DEVICE_POLL_INTERVAL_SECONDS (5), DEVICE_LOGIN_TTL_SECONDS (600),
// PUBLIC_URL (http://localhost:PORT).
import { createHash, randomBytes, randomInt } from 'node:crypto';
import pg from 'pg';

export const BODY_LIMIT = 16 * 1024;
export const REALM = 'prospect';
export const AUTHENTICATION_REQUIRED = 'Authentication required: send `Authorization: Bearer <token>`.';
const LAST_USED_RESOLUTION_MS = 60_000;
const POLL_JITTER_MS = 1_000;
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const SECRET_RE = /^[A-Za-z0-9_-]+$/;

// The statements, by the names they are prepared under on each pooled connection.
const SQL = {
  me: `SELECT t.id AS token_id, t.expires_at, t.revoked_at, t.last_used_at, COALESCE(t.issued_at, t.created_at) AS issued_at, t.scope,
              u.id AS user_id, u.email, u.name, u.role
         FROM access_tokens t JOIN users u ON u.id = t.user_id
        WHERE t.token_hash = $1`,
  // OrganizationsRepository.listForUser's statement: a token that may read organizations (`orgs`,
  // which the CLI's tokens have by default, and the seeded ones) lists them on every /me.
  organizations: `SELECT o.id, o.slug, o.name, m.role FROM organization_members m JOIN organizations o ON o.id = m.organization_id
        WHERE m.user_id = $1 AND NOT EXISTS (SELECT 1 FROM organization_departures d
                WHERE d.organization_id = m.organization_id AND d.user_id = m.user_id AND d.left_at >= $2::timestamptz) ORDER BY o.name, o.slug`,
  touch: `UPDATE access_tokens SET last_used_at = $2
        WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`,
  start: `INSERT INTO device_logins (device_code_hash, user_code, client_name, hostname, requested_ip, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
  // AuditService.record's statement.
  audit: `INSERT INTO auth_events (type, user_id, ip, detail, created_at) VALUES ($1, $2, $3, $4, $5)`,
  // DeviceLoginsRepository.claimPoll's statement: the login read, its slot in the unlogged table claimed.
  poll: `WITH login AS (
         SELECT id, status, expires_at, client_name, hostname FROM device_logins WHERE device_code_hash = $1
       ), claimed AS (
         INSERT INTO device_poll_slots AS s (device_login_id, last_polled_at) SELECT id, $3 FROM login
         ON CONFLICT (device_login_id) DO UPDATE SET last_polled_at = EXCLUDED.last_polled_at WHERE s.last_polled_at <= $2
         RETURNING s.device_login_id
       )
       SELECT login.*, EXISTS (SELECT 1 FROM claimed) AS accepted FROM login`,
};

export const sha256 = (s) => createHash('sha256').update(s).digest();
const generateSecret = (prefix) => prefix + randomBytes(32).toString('base64url');
const looksLikeSecret = (v, prefix) => typeof v === 'string' && v.length === prefix.length + 43 && v.startsWith(prefix) && SECRET_RE.test(v);
function generateUserCode() {
  let code = '';
  for (let i = 0; i < 8; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/** An answer: the status, the JSON body and any extra headers. */
export const answer = (status, body, headers) => ({ status, body, headers });
/** An error answer, with the service's one error body. */
export const failure = (status, error, message, headers) => answer(status, { statusCode: status, error, message }, headers);

/** The RFC 6750 challenge of a 401 (the same string passport-http-bearer builds for realm "prospect"). */
export const challenge = (description) =>
  description ? `Bearer realm="${REALM}", error="invalid_token", error_description="${description}"` : `Bearer realm="${REALM}"`;

/** GET /api/cli/auth/me's body for a verified token's row and the organizations it lists (organizationsOf). */
export const meBody = (row, organizations) => ({ user: { id: row.user_id, email: row.email, name: row.name }, expiresAt: row.expires_at.toISOString(), organizations });

/**
 * Reads the configuration (exits if DATABASE_URL is missing), opens the pool and
 * returns the work of the three endpoints. `name` prefixes what goes to stderr.
 */
export function createFloor(name, defaultPort, env = process.env) {
  const port = Number(env.PORT ?? defaultPort);
  const config = {
    port,
    host: env.HOST ?? '127.0.0.1',
    pollIntervalS: Number(env.DEVICE_POLL_INTERVAL_SECONDS ?? 5),
    deviceTtlS: Number(env.DEVICE_LOGIN_TTL_SECONDS ?? 600),
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/+$/, ''),
  };
  const warn = (msg) => process.stderr.write(`${name}: ${msg}\n`);
  if (!env.DATABASE_URL) {
    warn('DATABASE_URL is required');
    process.exit(1);
  }
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: Number(env.POOL_SIZE ?? 10), connectionTimeoutMillis: 5_000 });
  pool.on('error', (err) => warn(`idle client error: ${err.message}`));

  // Named prepared statements, as the API sends on a Postgres server: each pooled
  // connection parses and plans a statement once.
  const query = (statement, values) => pool.query({ name: statement, text: SQL[statement], values });

  /**
   * TokensService.verify without the cache: `{ row }` for a valid token,
   * `{ reason }` ('unknown', 'revoked', 'expired') otherwise.
   */
  async function verifyToken(raw) {
    if (!looksLikeSecret(raw, 'prs_')) return { reason: 'unknown' };
    const now = new Date();
    const { rows } = await query('me', [sha256(raw)]);
    const row = rows[0];
    if (!row) return { reason: 'unknown' };
    if (row.revoked_at) return { reason: 'revoked' };
    if (row.expires_at.getTime() <= now.getTime()) return { reason: 'expired' };
    if (row.last_used_at === null || now.getTime() - row.last_used_at.getTime() >= LAST_USED_RESOLUTION_MS) {
      // Not awaited, as in the API.
      query('touch', [row.token_id, now, new Date(now.getTime() - LAST_USED_RESOLUTION_MS)]).catch((err) =>
        warn(`could not record token use: ${err.message}`),
      );
    }
    return { row };
  }

  /**
   * The organizations a verified token's person acts for, as /me lists them (OrganizationsService.listFor);
   * undefined, without a read, for a token without `orgs` (a seeded token's scope is its own or the CLI's).
   */
  async function organizationsOf(row) {
    if (row.scope !== null && !row.scope.split(' ').includes('orgs')) return undefined;
    return (await query('organizations', [row.user_id, row.issued_at])).rows;
  }

  /** POST /api/cli/auth/device/start: DeviceLoginService.start + AuditService.record. */
  async function start(body, ip) {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return failure(400, 'invalid_request', 'Invalid body.');
    for (const key of Object.keys(body)) {
      if (key !== 'clientName' && key !== 'hostname') return failure(400, 'invalid_request', `Unknown field: ${key}.`);
      const max = key === 'clientName' ? 100 : 255;
      if (typeof body[key] !== 'string' || body[key].length < 1 || body[key].length > max) return failure(400, 'invalid_request', `Invalid ${key}.`);
    }
    const deviceCode = generateSecret('prsd_');
    const now = new Date();
    const expiresAt = new Date(now.getTime() + config.deviceTtlS * 1000);
    for (let attempt = 0; ; attempt++) {
      const userCode = generateUserCode();
      let id;
      try {
        const { rows } = await query('start', [sha256(deviceCode), userCode, body.clientName ?? null, body.hostname ?? null, ip, now, expiresAt]);
        id = rows[0].id;
      } catch (err) {
        if (attempt < 5 && err.code === '23505') continue;
        throw err;
      }
      await query('audit', ['device.start', null, ip, JSON.stringify({ deviceLoginId: id, clientName: body.clientName ?? null }), new Date()]);
      const shown = `${userCode.slice(0, 4)}-${userCode.slice(4)}`;
      return answer(200, {
        deviceCode,
        userCode: shown,
        verificationUrl: `${config.publicUrl}/device?user_code=${shown}`,
        intervalSeconds: config.pollIntervalS,
        expiresInSeconds: config.deviceTtlS,
      });
    }
  }

  /** POST /api/cli/auth/device/poll: DeviceLoginService.poll for pending logins. */
  async function poll(body) {
    const code = body?.deviceCode;
    if (typeof body !== 'object' || body === null || Object.keys(body).length !== 1 || typeof code !== 'string' || code.length < 1 || code.length > 200)
      return failure(400, 'invalid_request', 'Missing field: deviceCode.');
    if (!looksLikeSecret(code, 'prsd_')) return failure(400, 'invalid_request', 'Unknown device code.');
    const now = new Date();
    const earliestPrevious = new Date(now.getTime() - config.pollIntervalS * 1000 + POLL_JITTER_MS);
    const { rows } = await query('poll', [sha256(code), earliestPrevious, now]);
    const login = rows[0];
    if (!login) return failure(400, 'invalid_request', 'Unknown device code.');
    const expired = login.expires_at.getTime() <= now.getTime();
    if (login.status === 'pending') {
      if (expired) return answer(200, { status: 'denied' });
      if (!login.accepted)
        return failure(429, 'slow_down', `Polling too fast: wait ${config.pollIntervalS} seconds between polls.`, { 'retry-after': String(config.pollIntervalS) });
      return answer(200, { status: 'pending' });
    }
    if (login.status === 'denied' || expired) return answer(200, { status: 'denied' });
    // Redemption (approved) and replay (redeemed) are not benchmarked; the floors do not implement them.
    return failure(501, 'internal', 'The floor server does not redeem device logins.');
  }

  return { config, verifyToken, organizationsOf, start, poll, warn, end: () => pool.end() };
}
