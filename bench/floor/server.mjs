// The floor: the least work this stack (node:http + pg on Postgres) can do to
// serve the three benchmarked endpoints. No framework, no ORM, no logging, no
// cache: per request it runs exactly the SQL the API runs on the same path and
// answers the same JSON bodies. The SQL and the work around it live in
// ./core.mjs, shared with the stack floor (bench/floor-stack), so the two floors
// cannot drift apart; this file is the HTTP around them. Written for
// bench/run.mjs; not a product.
//
// Env: PORT (default 3100), HOST (127.0.0.1), DATABASE_URL (required), POOL_SIZE
// (10, as the API with DATABASE_URL), DEVICE_POLL_INTERVAL_SECONDS (5),
// DEVICE_LOGIN_TTL_SECONDS (600), PUBLIC_URL (http://localhost:PORT).
import http from 'node:http';
import { AUTHENTICATION_REQUIRED, BODY_LIMIT, challenge, createFloor, meBody } from './core.mjs';

const floor = createFloor('floor', 3100);
const { port: PORT, host: HOST } = floor.config;

function send(res, status, body, headers) {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json), ...headers });
  res.end(json);
}
const fail = (res, status, error, message, headers) => send(res, status, { statusCode: status, error, message }, headers);
const reply = (res, { status, body, headers }) => send(res, status, body, headers);

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

// GET /api/cli/auth/me — TokensService.verify without the cache, then the organizations it lists.
async function me(req, res) {
  const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
  if (!m) return fail(res, 401, 'unauthorized', AUTHENTICATION_REQUIRED, { 'www-authenticate': challenge() });
  const { row, reason } = await floor.verifyToken(m[1]);
  if (!row) return fail(res, 401, 'invalid_token', `token ${reason}`, { 'www-authenticate': challenge(`token ${reason}`) });
  send(res, 200, meBody(row, await floor.organizationsOf(row)));
}

// POST /api/cli/auth/device/start — DeviceLoginService.start + AuditService.record.
async function start(req, res) {
  const body = await readJson(req);
  reply(res, await floor.start(body, req.socket.remoteAddress ?? null));
}

// POST /api/cli/auth/device/poll — DeviceLoginService.poll for pending logins.
async function poll(req, res) {
  reply(res, await floor.poll(await readJson(req)));
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
    floor.warn(err.stack ?? err);
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
    floor.end().finally(() => process.exit(0));
  });
}
