// The floor: the least work this stack (node:http + pg on Postgres) can do to
// serve the three benchmarked endpoints. No framework, no ORM, no logging, no
// cache: per request it runs exactly the SQL the API runs on the same path
// (apps/api/src/tokens/tokens.service.ts `verify`, apps/api/src/device-login/
// device-login.service.ts `start` and `poll`, apps/api/src/audit/audit.service.ts)
// and answers the same JSON bodies. Written for bench/run.mjs; not a product.
//
// Env: PORT (default 3100), HOST (127.0.0.1), DATABASE_URL (required), POOL_SIZE
// (10, as the API with DATABASE_URL), DEVICE_POLL_INTERVAL_SECONDS (5),
// DEVICE_LOGIN_TTL_SECONDS (600), PUBLIC_URL (http://localhost:PORT).
import { createHash, randomBytes, randomInt } from 'node:crypto';
import http from 'node:http';
import pg from 'pg';

const PORT = Number(process.env.PORT ?? 3100);
const HOST = process.env.HOST ?? '127.0.0.1';
const POLL_INTERVAL_S = Number(process.env.DEVICE_POLL_INTERVAL_SECONDS ?? 5);
const DEVICE_TTL_S = Number(process.env.DEVICE_LOGIN_TTL_SECONDS ?? 600);
const PUBLIC_URL = (process.env.PUBLIC_URL ?? `http://localhost:${PORT}`).replace(/\/+$/, '');
const LAST_USED_RESOLUTION_MS = 60_000;
const POLL_JITTER_MS = 1_000;
const BODY_LIMIT = 16 * 1024;
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const SECRET_RE = /^[A-Za-z0-9_-]+$/;

if (!process.env.DATABASE_URL) {
  process.stderr.write('floor: DATABASE_URL is required\n');
  process.exit(1);
}
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_SIZE ?? 10), connectionTimeoutMillis: 5_000 });
pool.on('error', (err) => process.stderr.write(`floor: idle client error: ${err.message}\n`));

// Named prepared statements, as the API sends on a Postgres server: each pooled
// connection parses and plans a statement once.
const query = (name, text, values) => pool.query({ name, text, values });

const sha256 = (s) => createHash('sha256').update(s).digest();
const generateSecret = (prefix) => prefix + randomBytes(32).toString('base64url');
const looksLikeSecret = (v, prefix) => typeof v === 'string' && v.length === prefix.length + 43 && v.startsWith(prefix) && SECRET_RE.test(v);
function generateUserCode() {
  let code = '';
  for (let i = 0; i < 8; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

function send(res, status, body, headers) {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json), ...headers });
  res.end(json);
}
const fail = (res, status, error, message, headers) => send(res, status, { statusCode: status, error, message }, headers);

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > BODY_LIMIT) reject(Object.assign(new Error('too large'), { status: 413 }));
      else chunks.push(c);
    });
    req.on('end', () => {
      if (size === 0) return resolve({});
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(Object.assign(new Error('bad json'), { status: 400 }));
      }
    });
    req.on('error', reject);
  });
}

const challenge = (description) =>
  description ? `Bearer realm="prospect", error="invalid_token", error_description="${description}"` : 'Bearer realm="prospect"';

// GET /api/cli/auth/me — TokensService.verify without the cache.
async function me(req, res) {
  const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
  if (!m) return fail(res, 401, 'unauthorized', 'Authentication required: send `Authorization: Bearer <token>`.', { 'www-authenticate': challenge() });
  const raw = m[1];
  const refuse = (reason) => fail(res, 401, 'invalid_token', `token ${reason}`, { 'www-authenticate': challenge(`token ${reason}`) });
  if (!looksLikeSecret(raw, 'prs_')) return refuse('unknown');
  const now = new Date();
  const { rows } = await query(
    'me',
    `SELECT t.id AS token_id, t.expires_at, t.revoked_at, t.last_used_at,
              u.id AS user_id, u.email, u.name, u.role
         FROM access_tokens t JOIN users u ON u.id = t.user_id
        WHERE t.token_hash = $1`,
    [sha256(raw)],
  );
  const row = rows[0];
  if (!row) return refuse('unknown');
  if (row.revoked_at) return refuse('revoked');
  if (row.expires_at.getTime() <= now.getTime()) return refuse('expired');
  if (row.last_used_at === null || now.getTime() - row.last_used_at.getTime() >= LAST_USED_RESOLUTION_MS) {
    // Not awaited, as in the API.
    query(
      'touch',
      `UPDATE access_tokens SET last_used_at = $2
        WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3)`,
      [row.token_id, now, new Date(now.getTime() - LAST_USED_RESOLUTION_MS)],
    ).catch((err) => process.stderr.write(`floor: could not record token use: ${err.message}\n`));
  }
  send(res, 200, { user: { id: row.user_id, email: row.email, name: row.name }, expiresAt: row.expires_at.toISOString() });
}

// POST /api/cli/auth/device/start — DeviceLoginService.start + AuditService.record.
async function start(req, res) {
  const body = await readJson(req);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return fail(res, 400, 'invalid_request', 'Invalid body.');
  for (const key of Object.keys(body)) {
    if (key !== 'clientName' && key !== 'hostname') return fail(res, 400, 'invalid_request', `Unknown field: ${key}.`);
    const max = key === 'clientName' ? 100 : 255;
    if (typeof body[key] !== 'string' || body[key].length < 1 || body[key].length > max) return fail(res, 400, 'invalid_request', `Invalid ${key}.`);
  }
  const ip = req.socket.remoteAddress ?? null;
  const deviceCode = generateSecret('prsd_');
  const now = new Date();
  const expiresAt = new Date(now.getTime() + DEVICE_TTL_S * 1000);
  for (let attempt = 0; ; attempt++) {
    const userCode = generateUserCode();
    let id;
    try {
      const { rows } = await query(
        'start',
        `INSERT INTO device_logins (device_code_hash, user_code, client_name, hostname, requested_ip, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
        [sha256(deviceCode), userCode, body.clientName ?? null, body.hostname ?? null, ip, now, expiresAt],
      );
      id = rows[0].id;
    } catch (err) {
      if (attempt < 5 && err.code === '23505') continue;
      throw err;
    }
    // AuditService.record's statement.
    await query('audit', `INSERT INTO auth_events (type, user_id, ip, detail, created_at) VALUES ($1, $2, $3, $4, $5)`, [
      'device.start',
      null,
      ip,
      JSON.stringify({ deviceLoginId: id, clientName: body.clientName ?? null }),
      new Date(),
    ]);
    const shown = `${userCode.slice(0, 4)}-${userCode.slice(4)}`;
    return send(res, 200, {
      deviceCode,
      userCode: shown,
      verificationUrl: `${PUBLIC_URL}/device?user_code=${shown}`,
      intervalSeconds: POLL_INTERVAL_S,
      expiresInSeconds: DEVICE_TTL_S,
    });
  }
}

// POST /api/cli/auth/device/poll — DeviceLoginService.poll for pending logins.
async function poll(req, res) {
  const body = await readJson(req);
  const code = body?.deviceCode;
  if (typeof body !== 'object' || body === null || Object.keys(body).length !== 1 || typeof code !== 'string' || code.length < 1 || code.length > 200)
    return fail(res, 400, 'invalid_request', 'Missing field: deviceCode.');
  if (!looksLikeSecret(code, 'prsd_')) return fail(res, 400, 'invalid_request', 'Unknown device code.');
  const now = new Date();
  const earliestPrevious = new Date(now.getTime() - POLL_INTERVAL_S * 1000 + POLL_JITTER_MS);
  const { rows } = await query(
    'poll',
    `WITH target AS (
         SELECT id, last_polled_at FROM device_logins WHERE device_code_hash = $1 FOR UPDATE
       )
       UPDATE device_logins d
          SET last_polled_at = CASE WHEN t.last_polled_at IS NULL OR t.last_polled_at <= $2 THEN $3 ELSE d.last_polled_at END
         FROM target t
        WHERE d.id = t.id
       RETURNING d.id, d.status, d.expires_at, d.client_name, d.hostname,
                 (t.last_polled_at IS NULL OR t.last_polled_at <= $2) AS accepted`,
    [sha256(code), earliestPrevious, now],
  );
  const login = rows[0];
  if (!login) return fail(res, 400, 'invalid_request', 'Unknown device code.');
  const expired = login.expires_at.getTime() <= now.getTime();
  if (login.status === 'pending') {
    if (expired) return send(res, 200, { status: 'denied' });
    if (!login.accepted)
      return fail(res, 429, 'slow_down', `Polling too fast: wait ${POLL_INTERVAL_S} seconds between polls.`, { 'retry-after': String(POLL_INTERVAL_S) });
    return send(res, 200, { status: 'pending' });
  }
  if (login.status === 'denied' || expired) return send(res, 200, { status: 'denied' });
  // Redemption (approved) and replay (redeemed) are not benchmarked; the floor does not implement them.
  return fail(res, 501, 'internal', 'The floor server does not redeem device logins.');
}

const routes = {
  'GET /api/cli/auth/me': me,
  'POST /api/cli/auth/device/start': start,
  'POST /api/cli/auth/device/poll': poll,
  'GET /healthz': async (_req, res) => send(res, 200, { status: 'ok' }),
};

const server = http.createServer((req, res) => {
  const q = req.url.indexOf('?');
  const handler = routes[`${req.method} ${q === -1 ? req.url : req.url.slice(0, q)}`];
  if (!handler) return fail(res, 404, 'not_found', 'No such route.');
  handler(req, res).catch((err) => {
    if (err.status && err.status < 500) return fail(res, err.status, 'invalid_request', 'The request body could not be read.');
    process.stderr.write(`floor: ${err.stack ?? err}\n`);
    if (!res.headersSent) fail(res, 500, 'internal', 'Something went wrong on our side. Please try again.');
  });
});
server.keepAliveTimeout = 5_000;
server.listen(PORT, HOST, () => process.stdout.write(`floor listening on http://${HOST}:${PORT}\n`));

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.once(signal, () => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => process.exit(1), 5_000).unref();
    server.close();
    server.closeAllConnections?.();
    pool.end().finally(() => process.exit(0));
  });
}
