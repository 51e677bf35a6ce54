// `npm run soak`: the API under a steady mixed load for SOAK_MINUTES (default 10) on a real
// Postgres: GET /api/cli/auth/me 70 %, POST …/device/poll 20 %, POST …/device/start 10 %, from
// one autocannon instance whose every request picks its route. Per minute: requests, non-2xx
// and latency percentiles per route, errors and timeouts, the API's RSS and CPU per request;
// then a verdict against the soak targets (no errors, RSS growth ≤ 10 % after the warm-up
// minute, a flat p99). See bench/README.md, "Soak".
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import pg from 'pg';
import { JSON_HEADERS, ROUTES, START_BODY, loads, seed } from './lib/data.mjs';
import { countLines, cpuSeconds, machineInfo, readProcStatus, tail } from './lib/processes.mjs';
import { createSession, startApi } from './lib/session.mjs';
import { mib, pct, report } from './lib/soak-report.mjs';
import { heapFlagsFromManifest } from './lib/heap-cap.mjs';
import { API_MAIN, BENCH_DIR, DEFAULT_DATABASE_URL, ROOT, envNumbers, fmt, isYes, makeLog, sleep } from './lib/util.mjs';

// hdr-histogram-js comes with autocannon; resolved from autocannon's own directory, so it is
// found wherever npm placed it.
const hdr = createRequire(createRequire(import.meta.url).resolve('autocannon'))('hdr-histogram-js');

const env = process.env;
const num = envNumbers(env);
const settings = {
  databaseUrl: env.BENCH_DATABASE_URL || DEFAULT_DATABASE_URL,
  minutes: num('SOAK_MINUTES', 10),
  connections: Math.round(num('SOAK_CONNECTIONS', 32)),
  tokens: Math.round(num('SOAK_TOKENS', 10_000)),
  deviceCodes: Math.round(num('SOAK_DEVICE_CODES', 60_000)),
  // The production default: a code may be polled again after 4 s (the API forgives 1 s of jitter).
  pollIntervalS: num('SOAK_POLL_INTERVAL', 5),
  apiNodeFlags: (env.SOAK_API_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean),
  // The heap flag the image's start script computes from the Kubernetes manifest's memory limit (bench/lib/heap-cap.mjs).
  heapFromManifest: isYes(env.SOAK_HEAP_FROM_MANIFEST),
  keepLogs: isYes(env.SOAK_KEEP_LOGS),
};
if (!(settings.minutes > 0)) throw new Error('SOAK_MINUTES must be more than 0');
if (settings.connections < 1) throw new Error('SOAK_CONNECTIONS must be at least 1');
if (settings.tokens < 1 || settings.deviceCodes < 1) throw new Error('SOAK_TOKENS and SOAK_DEVICE_CODES must be at least 1');

const DURATION_S = Math.max(1, Math.round(settings.minutes * 60));
// Minutes of the table: whole minutes, a remainder of 30 s or more as a last, shorter one (a
// shorter remainder goes to the last whole minute, so no "minute" is a few seconds long).
const MINUTES = DURATION_S <= 60 ? 1 : Math.floor(DURATION_S / 60) + (DURATION_S % 60 >= 30 ? 1 : 0);
const minuteEndS = (i) => (i === MINUTES - 1 ? DURATION_S : (i + 1) * 60);
// Only a run as long as the default is a result worth recording.
const writeResults = env.SOAK_WRITE ? isYes(env.SOAK_WRITE) : DURATION_S >= 600;

const MIX = { me: 70, poll: 20, start: 10 };
const ROUTE_NAMES = Object.keys(MIX);
const TIMEOUT_S = 10;

const log = makeLog('soak');
const session = createSession({ log, databaseUrl: settings.databaseUrl, keepLogs: settings.keepLogs, tmpPrefix: 'prospect-soak-' });

/** The soak test talks to loopback addresses only: the API listens on 127.0.0.1, and so must Postgres. */
function assertLoopback(url) {
  const u = new URL(url);
  const host = (u.searchParams.get('host') ?? decodeURIComponent(u.hostname)).replace(/^\[|\]$/g, '');
  const ok = host === '' || host.startsWith('/') || host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
  if (!ok) throw new Error(`BENCH_DATABASE_URL: the soak test uses loopback addresses only (got host ${JSON.stringify(host)})`);
}

/** Smooth weighted round-robin (as nginx's): every run of Σweights picks holds each route exactly `weight` times, interleaved. */
function weightedPicker(weights) {
  const names = Object.keys(weights);
  const w = names.map((n) => weights[n]);
  const total = w.reduce((a, b) => a + b, 0);
  const current = w.map(() => 0);
  return () => {
    let best = 0;
    for (let i = 0; i < w.length; i++) {
      current[i] += w[i];
      if (current[i] > current[best]) best = i;
    }
    current[best] -= total;
    return names[best];
  };
}

// Latencies in µs; 3 significant digits; grows past 2 min if it must.
const newHist = () => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3, autoResize: true });
const newStats = () => ({
  routes: Object.fromEntries(ROUTE_NAMES.map((r) => [r, { n: 0, non2xx: 0, s5xx: 0, codes: {}, hist: newHist(), errors: 0, timeouts: 0 }])),
  n: 0,
  non2xx: 0,
  s5xx: 0,
  errors: 0,
  timeouts: 0,
});

// ── before the load: the three routes answer as expected ─────────────────────
async function preflight(url, { tokens, codes }) {
  const check = async (name, path, init, ok) => {
    const res = await fetch(url + path, { ...init, signal: AbortSignal.timeout(5_000) });
    const body = await res.json().catch(() => undefined);
    if (!ok(res.status, body)) throw new Error(`preflight: ${name} answered ${res.status} ${JSON.stringify(body)}`);
  };
  await check('me', '/api/cli/auth/me', { headers: { authorization: `Bearer ${tokens[0]}` } }, (s) => s === 200);
  // The last code of the rotation: polled again only after every other one.
  await check(
    'poll',
    '/api/cli/auth/device/poll',
    { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ deviceCode: codes[codes.length - 1] }) },
    (s, b) => s === 200 && b?.status === 'pending',
  );
  await check('start', '/api/cli/auth/device/start', { method: 'POST', headers: JSON_HEADERS, body: START_BODY }, (s) => s === 200);
  log('preflight: /me, poll (pending) and start answer 200');
}

// ── the load ─────────────────────────────────────────────────────────────────
let sampler;
let instance;
const timers = [];
session.onCleanup(() => {
  clearInterval(sampler);
  for (const t of timers) clearTimeout(t);
  instance?.stop();
});

function soak(api, url, data) {
  const L = loads(data);
  const pick = weightedPicker(MIX);
  const minutes = Array.from({ length: MINUTES }, (_, i) => ({ index: i, ...newStats(), rssMax: 0 }));
  const totals = newStats();
  const rssSamples = [];
  const errorMessages = new Map();
  let unattributed = 0;

  // Poll throttling: with a strict rotation, the gap between two polls of one code is the
  // time the other codes took. lastPoll[i] is when code i was last sent.
  const { codes } = data;
  const lastPoll = new Float64Array(codes.length);
  let polls = 0;
  let minPollGapMs = Infinity;

  let t0;
  const minuteAt = (now) => minutes[Math.min(MINUTES - 1, Math.max(0, Math.floor((now - t0) / 60_000)))];

  const count = (route, fn) => {
    for (const s of [minuteAt(performance.now()), totals]) fn(s, route ? s.routes[route] : undefined);
  };
  const onError = (route, kind, err) => {
    if (kind === 'error') errorMessages.set(err?.code ?? err?.message, (errorMessages.get(err?.code ?? err?.message) ?? 0) + 1);
    if (!route) unattributed++;
    count(route, (s, r) => {
      s[kind === 'timeout' ? 'timeouts' : 'errors']++;
      if (r) r[kind === 'timeout' ? 'timeouts' : 'errors']++;
    });
  };

  // One request definition; each request picks its route (70/20/10) and, for /me and poll,
  // the next token or device code of run.mjs's rotations. The route is kept in the client's
  // per-request context, where the response handler finds it.
  const request = {
    setupRequest: (req, context) => {
      const route = pick();
      context.route = route;
      const def = L[route].request;
      let out = { ...req, method: def.method, path: def.path, headers: { ...req.headers, ...def.headers }, body: def.body };
      if (def.setupRequest) out = def.setupRequest(out);
      if (route === 'poll') {
        const now = performance.now();
        const i = polls % codes.length;
        if (polls >= codes.length) minPollGapMs = Math.min(minPollGapMs, now - lastPoll[i]);
        lastPoll[i] = now;
        polls++;
      }
      return out;
    },
  };
  // autocannon emits `request` on a client before it builds the next request: the context is
  // still the one of the request that just ended, which on a timeout is the one that timed out.
  const setupClient = (client) => {
    client.on('request', () => {
      client.soakLastRoute = client.requestIterator.context?.route;
    });
    client.on('timeout', () => onError(client.soakLastRoute, 'timeout'));
    client.on('connError', (err) => onError(client.requestIterator.context?.route, 'error', err));
  };

  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  let failure;
  let closed = 0;
  let cpuPrev;
  const closeMinute = (i) => {
    const m = minutes[i];
    m.rssEnd = readProcStatus(api.pid, 'VmRSS');
    m.cpu = cpuSeconds(api.pid);
    if (m.cpu !== undefined && cpuPrev !== undefined && m.n) m.cpuUs = ((m.cpu - cpuPrev) * 1e6) / m.n;
    cpuPrev = m.cpu;
    // Shorter if the load stopped early (the API died).
    m.seconds = Math.max(0.001, Math.min(minuteEndS(i), (performance.now() - t0) / 1000) - i * 60);
    closed = i + 1;
    const r = m.routes;
    log(
      `minute ${i + 1}/${MINUTES}: ${fmt(m.n / m.seconds)} req/s (me ${fmt(r.me.n)}, poll ${fmt(r.poll.n)}, start ${fmt(r.start.n)}); ` +
        `p99 me ${fmt(pct(r.me.hist, 99), 1)}, poll ${fmt(pct(r.poll.hist, 99), 1)}, start ${fmt(pct(r.start.hist, 99), 1)} ms; ` +
        `errors ${m.errors}, timeouts ${m.timeouts}, non-2xx ${m.non2xx}; RSS ${mib(m.rssEnd)} MiB; CPU ${fmt(m.cpuUs)} µs/req`,
    );
  };

  return new Promise((resolve, reject) => {
    cpuPrev = cpuSeconds(api.pid);
    t0 = performance.now();
    const startedAt = new Date();
    loopDelay.enable();
    instance = autocannon(
      { url, connections: settings.connections, duration: DURATION_S, timeout: TIMEOUT_S, requests: [request], setupClient },
      (err, result) => {
        clearTimeout(guard);
        clearInterval(sampler);
        for (const t of timers) clearTimeout(t);
        loopDelay.disable();
        // The last minute ends when the load does (a response may land a moment after).
        for (let i = closed; i < MINUTES; i++) closeMinute(i);
        if (err) return reject(err);
        if (failure) return reject(failure);
        resolve({
          minutes,
          totals,
          rssSamples,
          errorMessages,
          unattributed,
          polls,
          minPollGapMs,
          startedAt,
          seconds: (performance.now() - t0) / 1000,
          loopDelay: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
          autocannon: { total: result.requests.total, errors: result.errors, timeouts: result.timeouts, non2xx: result.non2xx },
        });
      },
    );
    instance.on('response', (client, statusCode, _bytes, responseTime) => {
      const route = client.requestIterator.context?.route;
      if (!route) {
        unattributed++;
        return;
      }
      const us = Math.max(1, Math.round(responseTime * 1000));
      const ok = statusCode >= 200 && statusCode < 300;
      count(route, (s, r) => {
        s.n++;
        r.n++;
        r.hist.recordValue(us);
        if (!ok) {
          s.non2xx++;
          r.non2xx++;
          r.codes[statusCode] = (r.codes[statusCode] ?? 0) + 1;
          if (statusCode >= 500) {
            s.s5xx++;
            r.s5xx++;
          }
        }
      });
    });
    // Bounded, whatever happens to the server.
    const guard = setTimeout(() => instance.stop(), (DURATION_S + 30) * 1000);
    for (let i = 0; i < MINUTES - 1; i++) timers.push(setTimeout(() => closeMinute(i), minuteEndS(i) * 1000 - (performance.now() - t0)));
    sampler = setInterval(() => {
      const rss = readProcStatus(api.pid, 'VmRSS');
      if (rss !== undefined) {
        rssSamples.push(rss);
        const m = minuteAt(performance.now());
        m.rssMax = Math.max(m.rssMax, rss);
      }
      if (!failure && (api.exitCode !== null || api.signalCode !== null)) {
        failure = new Error(
          `the API exited (${api.exitCode ?? api.signalCode}) ${((performance.now() - t0) / 1000).toFixed(0)} s into the load:\n${tail(`${api.logBase}.err.log`)}`,
        );
        instance.stop();
      }
    }, 1_000);
  });
}

// ── main ─────────────────────────────────────────────────────────────────────
async function main() {
  const began = Date.now();
  if (!existsSync(API_MAIN)) throw new Error('apps/api/dist/main.js is missing: run `npm run build` first (or use `npm run soak`)');
  assertLoopback(settings.databaseUrl);

  const { url: databaseUrl, pgVersion } = await session.createDatabase('prospect_soak');
  const info = machineInfo(pgVersion, ['apps/api', 'libs/contract']);
  const tmpDir = session.makeTmpDir();
  if (settings.heapFromManifest) {
    const { limit, flags } = heapFlagsFromManifest();
    settings.apiNodeFlags = [...flags, ...settings.apiNodeFlags];
    settings.manifestLimit = limit.text;
    log(`heap from the manifest's memory limit ${limit.text}: ${flags.join(' ') || 'no flag'}`);
  }
  const { child: api, url: apiUrl } = await startApi(session, {
    databaseUrl,
    pollIntervalS: settings.pollIntervalS,
    nodeArgs: settings.apiNodeFlags,
    logBase: join(tmpDir, 'api'),
  });
  const rssAfterStart = readProcStatus(api.pid, 'VmRSS');

  const db = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000, query_timeout: 120_000 });
  db.on('error', (err) => log(`bench database connection: ${err.message}`)); // e.g. dropped by the cleanup after a failure
  await db.connect();
  let dbOpen = true;
  session.onCleanup(() => (dbOpen ? Promise.race([db.end(), sleep(5_000)]) : undefined));
  const t0 = Date.now();
  // Pending logins outlive the run: a poll of an expired one is other work (it answers denied).
  const data = await seed(db, { tokens: settings.tokens, deviceCodes: settings.deviceCodes, deviceLoginTtlS: Math.max(3600, DURATION_S + 1800) });
  log(`seeded 1 user, ${settings.tokens} tokens, ${settings.deviceCodes} pending device logins in ${Date.now() - t0} ms`);
  await preflight(apiUrl, data);
  const dbSize = async () => Number((await db.query('SELECT pg_database_size(current_database()) AS n')).rows[0].n);
  const sizeBefore = await dbSize();

  log(
    `load: ${settings.connections} connections for ${fmt(DURATION_S)} s (${MINUTES} minute${MINUTES === 1 ? '' : 's'} in the table), /me 70 %, poll 20 %, start 10 %; ` +
      `a code comes round again after ${fmt(settings.deviceCodes)} polls`,
  );
  const run = await soak(api, apiUrl, data);

  let dbInfo;
  try {
    const counts = (await db.query('SELECT (SELECT count(*) FROM device_logins) AS d, (SELECT count(*) FROM auth_events) AS a')).rows[0];
    dbInfo = { sizeBefore, sizeAfter: await dbSize(), deviceLogins: Number(counts.d), authEvents: Number(counts.a) };
  } catch (err) {
    log(`database figures not read: ${err.message}`);
  }
  dbOpen = false;
  await Promise.race([db.end(), sleep(5_000)]);
  const hwm = readProcStatus(api.pid, 'VmHWM');
  await session.stopChild(api);
  const apiExit = api.exitCode !== null ? `exit code ${api.exitCode}` : `killed (${api.signalCode})`;
  const logLines = countLines(`${api.logBase}.out.log`);

  const date = run.startedAt.toISOString().slice(0, 10);
  const { md, verdict } = report({ settings, MINUTES, DURATION_S, TIMEOUT_S, ROUTE_NAMES }, { info, run, rssAfterStart, hwm, logLines, db: dbInfo, apiExit, date });
  process.stdout.write(`\n${md}`);
  if (writeResults) {
    const file = join(BENCH_DIR, 'results', `soak-${date}.md`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, md);
    log(`wrote ${relative(ROOT, file)}`);
  } else {
    log(`results not written to bench/results (${env.SOAK_WRITE ? 'SOAK_WRITE' : 'a run shorter than 10 minutes; SOAK_WRITE=1 forces it'})`);
  }
  log(`verdict: ${verdict}; done in ${((Date.now() - began) / 1000).toFixed(0)} s`);
}

session.run(main);
