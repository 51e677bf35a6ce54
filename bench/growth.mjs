// `npm run bench:growth` (issue #21 item 4): does a request cost more when the tables are big?
// The API alone, measured three times on one database: with the bench's usual data (1 user,
// 10,000 tokens, 60,000 pending device logins), then with a year's worth more history
// (GROWTH_ROWS ended device logins and GROWTH_ROWS access tokens, with the refresh tokens and
// audit events they imply, spread over 120 days), then after `main.js purge` (the hourly
// retention job, run once) has deleted what the retention windows no longer keep. Each phase
// loads /me, poll and start; the report compares each with the first phase and shows the
// tables' rows and sizes. See bench/README.md.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { ROUTES, loads, seed } from './lib/data.mjs';
import { cannon, summarizeRun } from './lib/load.mjs';
import { machineInfo, readProcStatus } from './lib/processes.mjs';
import { createSession, startApi } from './lib/session.mjs';
import { API_MAIN, BENCH_DIR, DEFAULT_DATABASE_URL, ROOT, envNumbers, fmt, makeLog, median, sleep } from './lib/util.mjs';

const env = process.env;
const num = envNumbers(env);
const settings = {
  databaseUrl: env.BENCH_DATABASE_URL || DEFAULT_DATABASE_URL,
  connections: num('BENCH_CONNECTIONS', 32),
  warmupS: num('BENCH_WARMUP', 3),
  durationS: num('BENCH_DURATION', 10),
  rounds: Math.max(1, num('BENCH_ROUNDS', 2)),
  growthRows: num('GROWTH_ROWS', 1_000_000),
  /** As run.mjs: 60,000 codes polled in rotation at the production interval (5 s) are never throttled. */
  deviceCodes: 60_000,
  tokens: 10_000,
  pollIntervalS: 5,
};
const ENDPOINTS = ['me', 'poll', 'start'];
const TABLES = ['device_logins', 'grants', 'access_tokens', 'refresh_tokens', 'auth_events'];
/** A phase within this much of the first passes (issue #21: "within 10 % of their empty-table rates"). */
const TOLERANCE = 0.1;

const log = makeLog('growth');
const session = createSession({ log, databaseUrl: settings.databaseUrl, tmpPrefix: 'prospect-growth-' });

/**
 * History as the API would have written it, straight into the tables (what takes the API weeks,
 * in a minute). Over the last 120 days, `rows` device logins: 85 % redeemed (each with its grant, its
 * access token, expired an hour later, and its refresh token, 30 days), 5 % denied, 5 % cancelled, 5 %
 * expired unanswered; `rows` access tokens in all (the rest are direct tokens of 90 days, a tenth
 * revoked); their audit events (start, decision, redeem or cancel). 10,000 people own them.
 * User codes are digits, which a real code never has, so none collides with a live one; their
 * client_name is 'growth'.
 */
async function seedHistory(db, rows) {
  // Oldest first, as the API writes them: row i of n is (1 - i/n) × 120 days old.
  const at = (n) => `now() - make_interval(secs => (1 - i::float8 / ${n}) * 120 * 86400)`;
  const step = async (name, sql) => {
    const t0 = Date.now();
    const { rowCount } = await db.query(sql);
    log(`seeded ${fmt(rowCount)} ${name} in ${fmt((Date.now() - t0) / 1000, 1)} s`);
    return rowCount;
  };
  await step('users', `INSERT INTO users (email, name, role, created_at, updated_at, email_verified_at)
     SELECT 'growth' || i || '@example.com', 'Growth ' || i, 'user', now() - interval '200 days', now() - interval '200 days', now() - interval '200 days'
     FROM generate_series(0, 9999) AS i`);
  await db.query(`CREATE TEMP TABLE growth_users AS SELECT id, substring(email from '^growth([0-9]+)@')::int AS n FROM users WHERE email LIKE 'growth%@example.com'`);
  await db.query('CREATE INDEX ON growth_users (n)');
  await step('device logins', `INSERT INTO device_logins (device_code_hash, user_code, status, decided_by_user_id, decided_at, client_name, hostname, requested_ip, created_at, expires_at, redeemed_at, user_agent, client_id, scope)
     SELECT sha256(convert_to('growth-' || i, 'UTF8')), lpad(i::text, 8, '0'),
            CASE i % 20 WHEN 0 THEN 'denied' WHEN 1 THEN 'cancelled' WHEN 2 THEN 'pending' ELSE 'redeemed' END,
            CASE WHEN i % 20 IN (1, 2) THEN NULL ELSE u.id END,
            CASE WHEN i % 20 IN (1, 2) THEN NULL ELSE t + interval '20 seconds' END,
            'growth', 'host-' || (i % 5000), '10.0.' || (i % 250) || '.' || (i % 200), t, t + interval '15 minutes',
            CASE WHEN i % 20 > 2 THEN t + interval '25 seconds' END, 'prospect-cli/0.1.0', 'prospect-cli', 'profile tokens'
     FROM generate_series(1, ${rows}) AS i
     CROSS JOIN LATERAL (SELECT ${at(rows)} AS t) AS created
     JOIN growth_users u ON u.n = i % 10000`);
  // A redeemed login's grant under the login's id, as the API's approval writes one (grants/).
  await step('grants of redeemed logins', `INSERT INTO grants (id, user_id, client_id, grant_type, scope, amr, second_factor, created_at)
     SELECT d.id, d.decided_by_user_id, d.client_id, 'device_code', d.scope, ARRAY['pwd'], false, d.decided_at
     FROM device_logins d WHERE d.client_name = 'growth' AND d.status = 'redeemed'`);
  await db.query(`UPDATE device_logins SET grant_id = id WHERE client_name = 'growth' AND status = 'redeemed'`);
  const deviceTokens = await step('access tokens of device logins', `INSERT INTO access_tokens (token_hash, user_id, origin, grant_id, scope, created_ip, created_at, issued_at, expires_at, last_used_at)
     SELECT sha256(convert_to('growth-token-' || d.id, 'UTF8')), d.decided_by_user_id, 'device', d.id, d.scope, d.requested_ip, d.redeemed_at, d.decided_at,
            d.redeemed_at + interval '1 hour', d.redeemed_at + interval '30 minutes'
     FROM device_logins d WHERE d.client_name = 'growth' AND d.status = 'redeemed'`);
  const direct = rows - deviceTokens;
  await step('direct access tokens', `INSERT INTO access_tokens (token_hash, user_id, label, origin, created_ip, created_at, expires_at, revoked_at)
     SELECT sha256(convert_to('growth-direct-' || i, 'UTF8')), u.id, 'ci ' || i, 'direct', '10.1.0.1', t, t + interval '90 days', CASE WHEN i % 10 = 0 THEN t + interval '1 day' END
     FROM generate_series(1, ${direct}) AS i
     CROSS JOIN LATERAL (SELECT ${at(direct)} AS t) AS created
     JOIN growth_users u ON u.n = i % 10000`);
  await step('refresh tokens', `INSERT INTO refresh_tokens (token_hash, grant_id, user_id, created_at, expires_at, family_expires_at)
     SELECT sha256(convert_to('growth-refresh-' || d.id, 'UTF8')), d.id, d.decided_by_user_id, d.redeemed_at, d.redeemed_at + interval '30 days', d.redeemed_at + interval '90 days'
     FROM device_logins d WHERE d.client_name = 'growth' AND d.status = 'redeemed'`);
  await step('audit events', `INSERT INTO auth_events (type, user_id, ip, detail, created_at)
     SELECT e.type, CASE WHEN e.type = 'device.start' THEN NULL ELSE d.decided_by_user_id END, d.requested_ip,
            jsonb_build_object('deviceLoginId', d.id, 'clientName', d.client_name, 'clientId', d.client_id), d.created_at + e.after
     FROM device_logins d
     CROSS JOIN LATERAL (VALUES ('device.start', interval '0'),
                          (CASE d.status WHEN 'denied' THEN 'device.deny' WHEN 'redeemed' THEN 'device.approve' WHEN 'cancelled' THEN 'device.cancel' END, interval '20 seconds'),
                          (CASE WHEN d.status = 'redeemed' THEN 'device.redeem' END, interval '25 seconds')) AS e(type, after)
     WHERE d.client_name = 'growth' AND e.type IS NOT NULL`);
  await db.query(`VACUUM ANALYZE users, ${TABLES.join(', ')}`);
}

async function tableSizes(db) {
  const sizes = {};
  for (const t of TABLES) {
    const { rows } = await db.query(`SELECT count(*)::int AS n, pg_total_relation_size($1::regclass)::bigint AS bytes FROM ${t}`, [t]);
    sizes[t] = { rows: rows[0].n, bytes: Number(rows[0].bytes) };
  }
  return sizes;
}

/** `node apps/api/dist/main.js purge` on the bench database: the retention job, once. */
function purge(databaseUrl) {
  const t0 = Date.now();
  const res = spawnSync(process.execPath, [API_MAIN, 'purge'], { cwd: ROOT, encoding: 'utf8', env: { ...env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, timeout: 600_000 });
  if (res.status !== 0) throw new Error(`main.js purge failed (exit ${res.status}): ${res.stderr.trim()}`);
  // Its log (JSON lines) shares stdout with its answer.
  const output = res.stdout.split('\n').find((line) => !line.startsWith('{')) ?? res.stdout.trim();
  log(`purge: ${output} (process ${fmt((Date.now() - t0) / 1000, 1)} s)`);
  return output;
}

async function measure(phase, api, shared, db, results) {
  for (let round = 1; round <= settings.rounds; round++) {
    for (const e of ENDPOINTS) {
      // As run.mjs: every token used just now, so no load begins with a backlog of last_used_at writes.
      if (e === 'me') await db.query(`UPDATE access_tokens SET last_used_at = now() WHERE label = 'bench'`);
      if (settings.warmupS > 0) await cannon(api.url, shared[e], settings.warmupS, settings);
      const r = summarizeRun(await cannon(api.url, shared[e], settings.durationS, settings));
      ((results[phase] ??= {})[e] ??= []).push(r);
      log(`${phase.padEnd(16)} round ${round} ${e.padEnd(5)} ${fmt(r.rps).padStart(6)} req/s  p99 ${fmt(r.p99, 1)} ms  non-2xx ${r.non2xx}`);
      await sleep(300);
    }
  }
}

function report({ info, results, sizes, purges, date, seedSeconds, rss }) {
  const phases = Object.keys(results);
  const med = (phase, e, key) => median(results[phase][e].map((r) => r[key]));
  const base = phases[0];
  const lines = [
    `# Growth run ${date}`,
    '',
    `- Machine: ${info.cpus} × ${info.model}, ${info.memGiB} GiB RAM, ${info.kernel}; 1-minute load average ${info.loadBefore} before the run`,
    `- Node ${info.node}; ${info.postgres}; commit ${info.commit}`,
    `- Load: autocannon, ${settings.connections} connections, ${settings.warmupS} s warm-up + ${settings.durationS} s measured, ${settings.rounds} rounds per phase; medians`,
    `- The API alone (\`node apps/api/dist/main.js\`, NODE_ENV=production, pool of 10). Phases: **${phases.join('**, **')}**. History: ${fmt(settings.growthRows)} ended device logins and ${fmt(settings.growthRows)} access tokens over 120 days, with their refresh tokens and audit events (seeded in ${fmt(seedSeconds)} s); the loads use the bench's own 10,000 tokens and 60,000 pending codes throughout`,
    '',
    `| endpoint | ${phases.map((p) => `${p} req/s | p99 ms`).join(' | ')} | ${phases.slice(1).map((p) => `${p} / ${base}`).join(' | ')} | within ${TOLERANCE * 100} % |`,
    `|---|${phases.map(() => '---:|---:').join('|')}|${phases.slice(1).map(() => '---:').join('|')}|---|`,
  ];
  for (const e of ENDPOINTS) {
    const ratios = phases.slice(1).map((p) => med(p, e, 'rps') / med(base, e, 'rps'));
    lines.push(
      `| \`${ROUTES[e]}\` | ${phases.map((p) => `${fmt(med(p, e, 'rps'))} | ${fmt(med(p, e, 'p99'), 1)}`).join(' | ')} | ${ratios.map((r) => `${fmt(r, 2)}×`).join(' | ')} | ${ratios.every((r) => r >= 1 - TOLERANCE) ? 'yes' : '**no**'} |`,
    );
  }
  lines.push('', '| table | ' + Object.keys(sizes).map((k) => `${k}: rows | size`).join(' | ') + ' |', '|---|' + Object.keys(sizes).map(() => '---:|---:').join('|') + '|');
  for (const t of TABLES) lines.push(`| \`${t}\` | ${Object.values(sizes).map((s) => `${fmt(s[t].rows)} | ${fmt(s[t].bytes / 2 ** 20)} MiB`).join(' | ')} |`);
  lines.push('', `Retention: \`main.js purge\` said “${purges[0]}”; run again at once: “${purges[1]}”.`);
  lines.push('', `API RSS: ${fmt(rss.afterStart / 2 ** 20)} MiB once started, peak ${fmt(rss.peak / 2 ** 20)} MiB (VmHWM).`, '');
  return lines.join('\n');
}

async function main() {
  const began = Date.now();
  const { url: databaseUrl, pgVersion } = await session.createDatabase('prospect_growth');
  const info = machineInfo(pgVersion);
  const tmpDir = session.makeTmpDir();
  const api = await startApi(session, { databaseUrl, pollIntervalS: settings.pollIntervalS, logBase: join(tmpDir, 'api') });
  const rss = { afterStart: readProcStatus(api.child.pid, 'VmRSS') };
  const db = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000, query_timeout: 900_000 });
  await db.connect();
  db.on('error', (err) => log(`bench database connection: ${err.message}`)); // e.g. dropped by the cleanup after a failure
  const data = await seed(db, { tokens: settings.tokens, deviceCodes: settings.deviceCodes });
  const shared = loads(data);
  const results = {};
  const sizes = {};

  sizes['bench data'] = await tableSizes(db);
  await measure('bench data', api, shared, db, results);

  const t0 = Date.now();
  await seedHistory(db, settings.growthRows);
  const seedSeconds = (Date.now() - t0) / 1000;
  sizes['+ history'] = await tableSizes(db);
  await measure('+ history', api, shared, db, results);

  const purges = [purge(databaseUrl), purge(databaseUrl)];
  await db.query(`VACUUM ANALYZE ${TABLES.join(', ')}`);
  sizes['after purge'] = await tableSizes(db);
  await measure('after purge', api, shared, db, results);

  rss.peak = readProcStatus(api.child.pid, 'VmHWM');
  await db.end();
  await session.stopChild(api.child);
  const date = new Date().toISOString().slice(0, 10);
  const md = report({ info, results, sizes, purges, date, seedSeconds, rss });
  process.stdout.write(`\n${md}`);
  if (settings.growthRows >= 1_000_000 && settings.durationS >= 10) {
    const file = join(BENCH_DIR, 'results', `growth-${date}.md`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, md);
    log(`wrote ${relative(ROOT, file)}`);
  }
  log(`done in ${fmt((Date.now() - began) / 1000)} s`);
}

session.run(main);
