// `npm run bench`: the API side by side with two floors, on a real Postgres, under
// autocannon: the hand-written node:http floor (bench/floor) and the stack floor
// (bench/floor-stack: the least Nest on Express with the passport bearer guard can
// do). See bench/README.md for what each number means.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import pg from 'pg';
import { summarizeProfile, formatSummary } from './profile-summary.mjs';
import { JSON_HEADERS, ROUTES, START_BODY, loads, oidcLoads, seed, seedServiceAccounts } from './lib/data.mjs';
import { cannon, summarizeRun } from './lib/load.mjs';
import { countLines, cpuSeconds, freePort, machineInfo, readProcStatus, tail, waitReady } from './lib/processes.mjs';
import { LABEL, report } from './lib/report.mjs';
import { heapFlagsFromManifest } from './lib/heap-cap.mjs';
import { openHeapSampling, openWindow, probeFor } from './lib/probe.mjs';
import { formatHeapSummary, summarizeHeapProfile } from './heap-profile-summary.mjs';
import { createSession, startApi } from './lib/session.mjs';
import { API_MAIN, BENCH_DIR, DEFAULT_DATABASE_URL, ROOT, envNumbers, fmt, isNo, isYes, makeLog, sleep } from './lib/util.mjs';

const FLOOR_MAIN = join(BENCH_DIR, 'floor/server.mjs');
const STACK_SRC = join(BENCH_DIR, 'floor-stack/src/server.ts');
// Git-ignored (dist/); at the same depth as src/, so the source's relative imports hold.
const STACK_MAIN = join(BENCH_DIR, 'floor-stack/dist/server.mjs');
const CLI_STARTUP = join(BENCH_DIR, 'cli-startup/run.mjs');
const OIDC_MAIN = join(BENCH_DIR, 'oidc/server.mjs');
const OIDC_CLIENT_ID = 'bench-cli';

const env = process.env;
const num = envNumbers(env);
// `cc`: the client credentials grant (issue #45), which the floors do not implement: the API beside oidc-provider only.
const ENDPOINT_NAMES = ['me', 'poll', 'start', 'cc'];
const FLOORLESS_ENDPOINTS = ['cc'];
const TARGET_NAMES = ['api', 'floor', 'stack', 'oidc'];
const FLOORS = ['floor', 'stack'];
const settings = {
  databaseUrl: env.BENCH_DATABASE_URL || DEFAULT_DATABASE_URL,
  connections: num('BENCH_CONNECTIONS', 32),
  // Requests per second across all connections; 0 loads as fast as the server answers.
  rate: num('BENCH_RATE', 0),
  warmupS: num('BENCH_WARMUP', 3),
  durationS: num('BENCH_DURATION', 10),
  rounds: Math.max(1, num('BENCH_ROUNDS', 3)),
  tokens: num('BENCH_TOKENS', 10_000),
  deviceCodes: num('BENCH_DEVICE_CODES', 60_000),
  tokenScope: process.env.BENCH_TOKEN_SCOPE || null,
  // Clients of the client credentials load, on each server: 64 keeps each client ID to a request or two in flight at 32 connections.
  serviceAccounts: num('BENCH_SERVICE_ACCOUNTS', 64),
  // oidc-provider throttles no poll, so it needs no more codes than keep its rows apart.
  oidcDeviceCodes: num('BENCH_OIDC_DEVICE_CODES', 10_000),
  // The production default. With 1 the API's 1 s jitter allowance disables throttling altogether.
  pollIntervalS: num('BENCH_POLL_INTERVAL', 5),
  endpoints: (env.BENCH_ENDPOINTS || ENDPOINT_NAMES.join(',')).split(',').map((s) => s.trim()).filter(Boolean),
  targets: (env.BENCH_TARGETS || TARGET_NAMES.join(',')).split(',').map((s) => s.trim()).filter(Boolean),
  profile: isYes(env.BENCH_PROFILE),
  // Where each request's bytes are allocated: the sampling heap profiler over every measured run.
  heapSample: isYes(env.BENCH_HEAP_SAMPLE),
  cli: !isNo(env.BENCH_CLI),
  keepLogs: isYes(env.BENCH_KEEP_LOGS),
};
for (const e of settings.endpoints) if (!ENDPOINT_NAMES.includes(e)) throw new Error(`BENCH_ENDPOINTS: unknown endpoint ${e} (use ${ENDPOINT_NAMES.join(', ')})`);
for (const t of settings.targets) if (!TARGET_NAMES.includes(t)) throw new Error(`BENCH_TARGETS: unknown target ${t} (use ${TARGET_NAMES.join(', ')})`);
// Always in the same order, A B C, whatever order BENCH_TARGETS lists them in.
settings.targets = TARGET_NAMES.filter((t) => settings.targets.includes(t));
// The floors that are started (and checked against the API); the API always is, its migrations create the schema.
const floorsRun = FLOORS.filter((t) => settings.targets.includes(t));
// Only a full, unprofiled run is a result worth recording.
const isFullRun =
  !settings.profile && !settings.heapSample && settings.endpoints.length === ENDPOINT_NAMES.length && settings.targets.length === TARGET_NAMES.length && settings.rounds >= 2 && settings.durationS >= 10 && settings.warmupS >= 3 && !settings.rate;
const writeResults = env.BENCH_WRITE ? isYes(env.BENCH_WRITE) : isFullRun;

const log = makeLog('bench');

// ── cleanup, also on failure and Ctrl-C (bench/lib/session.mjs) ───────────────
const session = createSession({ log, databaseUrl: settings.databaseUrl, keepLogs: settings.keepLogs, tmpPrefix: 'prospect-bench-' });
let sampler;
session.onCleanup(() => clearInterval(sampler));
const stopChild = (child) => session.stopChild(child);

// ── load (bench/lib/load.mjs) ────────────────────────────────────────────────
const load = (url, request, seconds) => cannon(url, request, seconds, { connections: settings.connections, rate: settings.rate });

// ── the floors answer what the API answers ───────────────────────────────────
// `urls` has the API and every floor that runs; each floor is compared with the API.
async function parityCheck(urls, { tokens, codes }) {
  const shape = (v) => (v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)])) : typeof v);
  const targets = Object.keys(urls);
  const cases = [
    { name: 'me', path: '/api/cli/auth/me', init: () => ({ headers: { authorization: `Bearer ${tokens[0]}` } }), same: 'value' },
    { name: 'me (unknown token)', path: '/api/cli/auth/me', init: () => ({ headers: { authorization: `Bearer prs_${'A'.repeat(43)}` } }), same: 'status', challenge: true },
    { name: 'me (no token)', path: '/api/cli/auth/me', init: () => ({}), same: 'status', challenge: true },
    // The last codes of the rotation, one per server: polled again only after every other one.
    ...targets.map((t, i) => ({
      name: 'poll',
      path: '/api/cli/auth/device/poll',
      only: t,
      init: () => ({ method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ deviceCode: codes[codes.length - 1 - i] }) }),
      same: 'value',
    })),
    { name: 'start', path: '/api/cli/auth/device/start', init: () => ({ method: 'POST', headers: JSON_HEADERS, body: START_BODY }), same: 'shape' },
  ];
  const answers = Object.fromEntries(targets.map((t) => [t, {}]));
  for (const c of cases)
    for (const t of targets) {
      if (c.only && c.only !== t) continue;
      const res = await fetch(urls[t] + c.path, { ...c.init(), signal: AbortSignal.timeout(5_000) });
      answers[t][c.name] = { status: res.status, challenge: res.headers.get('www-authenticate'), body: await res.json().catch(() => undefined) };
    }
  const problems = [];
  for (const floor of targets.filter((t) => t !== 'api'))
    for (const c of cases.filter((x) => !x.only || x.only === 'api')) {
      const a = answers.api[c.name];
      const f = answers[floor][c.name];
      const label = `${c.name}: API ${a.status}, ${LABEL[floor]} ${f.status}`;
      if (a.status !== f.status) problems.push(label);
      else if (c.challenge && a.status === 401 && !f.challenge) problems.push(`${label}, but no WWW-Authenticate from the ${LABEL[floor]}`);
      else if (c.same !== 'status' && JSON.stringify(c.same === 'value' ? a.body : shape(a.body)) !== JSON.stringify(c.same === 'value' ? f.body : shape(f.body)))
        problems.push(`${c.name}: API ${JSON.stringify(a.body)}, ${LABEL[floor]} ${JSON.stringify(f.body)}`);
    }
  if (problems.length) throw new Error(`a floor does not answer what the API answers:\n  ${problems.join('\n  ')}`);
  log(`parity: the ${targets.filter((t) => t !== 'api').map((t) => LABEL[t]).join(' and the ')} answer${targets.length > 2 ? '' : 's'} the same status and body (shape) as the API on every benchmarked endpoint`);
}

// ── the stack floor is TypeScript with decorators: compiled here, with swc ────
async function buildStackFloor() {
  const t0 = Date.now();
  const { transformFile } = await import('@swc/core');
  const { code } = await transformFile(STACK_SRC, {
    swcrc: false,
    configFile: false,
    sourceMaps: false,
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      // As tsc with experimentalDecorators + emitDecoratorMetadata: Nest's DI reads design:paramtypes.
      transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'es6' },
  });
  mkdirSync(dirname(STACK_MAIN), { recursive: true });
  writeFileSync(STACK_MAIN, code);
  log(`stack floor compiled to ${relative(ROOT, STACK_MAIN)} in ${Date.now() - t0} ms`);
}

// ── CLI startup ──────────────────────────────────────────────────────────────
/** bench/cli-startup/run.mjs measures it; its last line is one JSON object. */
function cliStartup() {
  log('CLI startup: running bench/cli-startup/run.mjs');
  const res = spawnSync(process.execPath, [CLI_STARTUP], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  const json = res.stdout?.trim().split('\n').reverse().find((l) => l.startsWith('{'));
  if (res.status !== 0 || !json) return { error: (res.stderr || res.error?.message || `exit ${res.status}`).trim().split('\n').slice(-1)[0] };
  return { ...JSON.parse(json), source: 'bench/cli-startup' };
}

// ── main ─────────────────────────────────────────────────────────────────────
async function main() {
  const began = Date.now();
  if (!existsSync(API_MAIN)) throw new Error('apps/api/dist/main.js is missing: run `npm run build` first (or use `npm run bench`)');
  // Before anything is started: a compile error stops the run here.
  if (floorsRun.includes('stack')) await buildStackFloor();

  const { url: databaseUrl, pgVersion } = await session.createDatabase('prospect_bench');

  const info = machineInfo(pgVersion);
  const tmpDir = session.makeTmpDir();
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const profileDir = join(BENCH_DIR, 'results/profiles');
  const profArgs = (name) => (settings.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}-${stamp}.cpuprofile`] : []);
  if (settings.profile) mkdirSync(profileDir, { recursive: true });

  // The API, as production runs it; its migrations create the schema.
  const apiFlags = (env.BENCH_API_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
  // BENCH_HEAP_FROM_MANIFEST=1: the API with the heap flag its image would have under the Kubernetes manifest's limit.
  if (isYes(env.BENCH_HEAP_FROM_MANIFEST)) {
    const { limit, flags } = heapFlagsFromManifest();
    apiFlags.unshift(...flags);
    env.BENCH_API_NODE_FLAGS = apiFlags.join(' ');
    log(`heap from the manifest's memory limit ${limit.text}: ${flags.join(' ') || 'no flag'}`);
  }
  // Every server runs with the allocation probe preloaded (bench/lib/alloc-probe.mjs, a port of its own).
  const probes = { api: await probeFor() };
  const {
    child: api,
    url: apiUrl,
    spawnedAt: apiSpawnedAt,
  } = await startApi(session, { databaseUrl, pollIntervalS: settings.pollIntervalS, nodeArgs: [...probes.api.nodeArgs, ...apiFlags, ...profArgs('api')], logBase: join(tmpDir, 'api'), extraEnv: probes.api.env });
  const rss = { api: { afterStart: readProcStatus(api.pid, 'VmRSS') } };

  const db = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000, query_timeout: 120_000 });
  db.on('error', (err) => log(`bench database connection: ${err.message}`)); // e.g. dropped by the cleanup after a failure
  await db.connect();
  const t0 = Date.now();
  const data = await seed(db, { tokens: settings.tokens, deviceCodes: settings.deviceCodes, tokenScope: settings.tokenScope });
  if (settings.endpoints.includes('cc')) data.serviceAccounts = await seedServiceAccounts(db, { count: settings.serviceAccounts });
  log(`seeded 1 user, ${settings.tokens} tokens, ${settings.deviceCodes} pending device logins, ${data.serviceAccounts?.length ?? 0} service accounts with a secret each in ${Date.now() - t0} ms`);

  // The floors: the same database, pool size and poll interval as the API.
  const servers = { api };
  const urls = { api: apiUrl };
  const spawnedAt = { api: apiSpawnedAt };
  for (const t of floorsRun) {
    const port = await freePort();
    probes[t] = await probeFor();
    const floorEnv = { ...env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, DEVICE_POLL_INTERVAL_SECONDS: String(settings.pollIntervalS), POOL_SIZE: '10', ...probes[t].env };
    spawnedAt[t] = Date.now();
    servers[t] = session.startChild(LABEL[t], [...probes[t].nodeArgs, ...profArgs(t), t === 'floor' ? FLOOR_MAIN : STACK_MAIN], floorEnv, join(tmpDir, t));
    urls[t] = `http://127.0.0.1:${port}`;
    await waitReady(servers[t], `${urls[t]}/healthz`);
    log(`${LABEL[t]} ready on :${port} (pid ${servers[t].pid}) after ${Date.now() - spawnedAt[t]} ms`);
  }

  if (floorsRun.length) await parityCheck(urls, data);

  // The peer: oidc-provider on the same database, seeding its own grant, tokens and device codes.
  let oidcData;
  if (settings.targets.includes('oidc')) {
    const port = await freePort();
    const seedOut = join(tmpDir, 'oidc-seed.json');
    spawnedAt.oidc = Date.now();
    probes.oidc = await probeFor();
    servers.oidc = session.startChild(LABEL.oidc, [...probes.oidc.nodeArgs, ...profArgs('oidc'), OIDC_MAIN], {
      ...env,
      ...probes.oidc.env,
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      POOL_SIZE: '10',
      TOKENS: String(settings.tokens),
      DEVICE_CODES: String(settings.oidcDeviceCodes),
      SERVICE_CLIENTS: String(settings.serviceAccounts),
      SEED_OUT: seedOut,
    }, join(tmpDir, 'oidc'));
    urls.oidc = `http://127.0.0.1:${port}`;
    await waitReady(servers.oidc, `${urls.oidc}/healthz`, 300_000);
    oidcData = JSON.parse(readFileSync(seedOut, 'utf8'));
    log(`${LABEL.oidc} ready on :${port} (pid ${servers.oidc.pid}) after ${Date.now() - spawnedAt.oidc} ms, seeded ${oidcData.tokens.length} access tokens and ${oidcData.codes.length} pending device codes`);
  }

  const minGapS = settings.pollIntervalS - 1; // the API forgives 1 s of jitter
  const pollNote =
    minGapS <= 0
      ? `DEVICE_POLL_INTERVAL_SECONDS=${settings.pollIntervalS}, which with the API's 1 s jitter allowance throttles no poll`
      : `DEVICE_POLL_INTERVAL_SECONDS=${settings.pollIntervalS} (production default), so no poll is throttled as long as a code comes round again no sooner than ${minGapS} s: ` +
        `${fmt(settings.deviceCodes)} codes in rotation hold up to ${fmt(settings.deviceCodes / minGapS)} polls/s`;
  log(`poll: ${pollNote}`);

  // What each server allocates with no request at all (timers, pools, listeners), per ms: taken off
  // the allocations of every measured run, so that bytes per request are the requests' own even
  // when a busy machine leaves few requests to share a run's background allocations.
  const idleAllocPerMs = {};
  for (const t of Object.keys(servers)) {
    const closeWindow = await openWindow(probes[t].port);
    await sleep(3_000);
    const idle = await closeWindow();
    idleAllocPerMs[t] = idle ? Math.max(0, idle.allocatedBytes / idle.windowMs) : 0;
    log(`${LABEL[t]} allocates ${fmt((idleAllocPerMs[t] * 1000) / 1024)} KiB/s when idle`);
  }

  rss.api.sampled = 0;
  sampler = setInterval(() => {
    rss.api.sampled = Math.max(rss.api.sampled, readProcStatus(api.pid, 'VmRSS') ?? 0);
  }, 250);

  // The API and the floors share one rotation (a code comes round again only after every other one); the peer has its own.
  const shared = loads(data);
  const L = { api: shared, floor: shared, stack: shared, oidc: oidcData && oidcLoads(oidcData, OIDC_CLIENT_ID) };
  const results = {};
  const heapSummaries = [];
  const timeline = [];
  let peakPollRps = 0;
  for (let round = 1; round <= settings.rounds; round++) {
    for (const e of settings.endpoints) {
      for (const target of settings.targets) {
        if (FLOORLESS_ENDPOINTS.includes(e) && FLOORS.includes(target)) continue;
        const server = servers[target];
        if (server.exitCode !== null || server.signalCode !== null) throw new Error(`${server.label} died:\n${tail(`${server.logBase}.err.log`)}`);
        // Same start for both: every token used just now, so neither load begins with a
        // backlog of 10,000 once-a-minute last_used_at writes the other one was spared.
        if (e === 'me') await db.query('UPDATE access_tokens SET last_used_at = now()').then(() => db.query('VACUUM access_tokens'));
        if (settings.warmupS > 0) await load(urls[target], L[target][e], settings.warmupS);
        const loadStart = Date.now();
        const closeWindow = await openWindow(probes[target].port);
        const closeSampling = settings.heapSample ? await openHeapSampling(probes[target].port) : undefined;
        let peakRss = 0;
        const rssSampler = setInterval(() => (peakRss = Math.max(peakRss, readProcStatus(server.pid, 'VmRSS') ?? 0)), 250);
        const cpuBefore = cpuSeconds(server.pid);
        const r = summarizeRun(await load(urls[target], L[target][e], settings.durationS));
        const cpuAfter = cpuSeconds(server.pid);
        clearInterval(rssSampler);
        const heap = await closeWindow();
        if (closeSampling) {
          const heapProfile = await closeSampling();
          mkdirSync(profileDir, { recursive: true });
          const file = join(profileDir, `heap-${target}-${e}-r${round}-${stamp}.heapprofile`);
          writeFileSync(file, JSON.stringify(heapProfile));
          heapSummaries.push(`\n## Allocations: ${LABEL[target]} ${e}, round ${round} (${relative(ROOT, file)})\n\n${formatHeapSummary(summarizeHeapProfile(heapProfile), 30, r.total)}`);
        }
        // Bytes the server's JavaScript heap allocated per answered request, and the share of
        // the server's CPU time its garbage collections took (bench/lib/alloc-probe.mjs).
        if (heap && r.total) {
          r.allocBytes = Math.max(0, heap.allocatedBytes - (idleAllocPerMs[target] ?? 0) * heap.windowMs) / r.total;
          r.allocBytesRaw = heap.allocatedBytes / r.total;
          r.gcMs = heap.gcMs;
          r.fullGcs = heap.fullGcCount;
        }
        r.peakRss = Math.max(peakRss, readProcStatus(server.pid, 'VmRSS') ?? 0);
        // The server's own CPU per answered request: what the framework costs, less sensitive
        // than req/s to whatever else the shared cores are doing.
        if (cpuBefore !== undefined && cpuAfter !== undefined && r.total) {
          r.cpuUs = ((cpuAfter - cpuBefore) * 1e6) / r.total;
          if (r.gcMs !== undefined && cpuAfter > cpuBefore) r.gcShare = r.gcMs / 1000 / (cpuAfter - cpuBefore);
        }
        r.rss = readProcStatus(server.pid, 'VmRSS');
        // Relative to the server's start, about where its CPU profile begins.
        timeline.push({ target, e, fromMs: loadStart - spawnedAt[target], toMs: Date.now() - spawnedAt[target] });
        ((results[e] ??= {})[target] ??= []).push(r);
        if (e === 'poll') peakPollRps = Math.max(peakPollRps, r.rps);
        log(
          `round ${round} ${e.padEnd(5)} ${LABEL[target].padEnd(11)} ${fmt(r.rps).padStart(6)} req/s  p50 ${fmt(r.p50, 1)} ms  p99 ${fmt(r.p99, 1)} ms  CPU ${fmt(r.cpuUs)} µs/req  alloc ${fmt((r.allocBytes ?? NaN) / 1024, 1)} KiB/req  GC ${fmt((r.gcShare ?? NaN) * 100, 1)} %  non-2xx ${r.non2xx}${r.errors + r.timeouts ? `  errors ${r.errors + r.timeouts}` : ''}${r.peakRss ? `  peak RSS ${fmt(r.peakRss / 2 ** 20)} MiB` : ''}`,
        );
        await sleep(300); // let background writes settle
      }
    }
  }
  clearInterval(sampler);
  await db.end();
  for (const [t, child] of Object.entries(servers)) (rss[t] ??= {}).peak = readProcStatus(child.pid, 'VmHWM');
  if (minGapS > 0 && peakPollRps * minGapS * 1.2 > settings.deviceCodes)
    log(`warning: poll ran at ${fmt(peakPollRps)} req/s; raise BENCH_DEVICE_CODES above ${fmt(peakPollRps * minGapS * 1.5)} to be sure no poll is throttled`);
  const api429 = results.poll?.api ? results.poll.api.reduce((a, r) => a + (r.codes['429'] ?? 0), 0) : undefined;

  for (const t of [...floorsRun, ...(servers.oidc ? ['oidc'] : [])]) await stopChild(servers[t]);
  await stopChild(api);
  const logLines = countLines(`${api.logBase}.out.log`);

  const cli = settings.cli ? cliStartup() : undefined;
  const date = new Date().toISOString().slice(0, 10);
  const md = report({ settings, floorsRun, env, info, results, rss, logLines, cli, date, pollNote, api429 });
  process.stdout.write(`\n${md}`);
  if (writeResults) {
    const file = join(BENCH_DIR, 'results', `${date}.md`);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, md);
    log(`wrote ${relative(ROOT, file)}`);
  } else {
    log('partial or profiled run: results not written to bench/results (BENCH_WRITE=1 forces it)');
  }

  for (const text of heapSummaries) process.stdout.write(text);
  if (settings.profile) {
    for (const label of ['api', ...floorsRun, ...(servers.oidc ? ['oidc'] : [])]) {
      const file = readdirSync(profileDir).find((f) => f === `${label}-${stamp}.cpuprofile`);
      if (!file) {
        log(`no profile written for ${label}`);
        continue;
      }
      // A profile also covers the server's startup and the other servers' turns: summarize its own measured loads.
      const window = timeline.filter((w) => w.target === label);
      const summary = summarizeProfile(JSON.parse(readFileSync(join(profileDir, file), 'utf8')), window.length ? { windows: window } : {});
      const span = window.length ? ` — measured ${LABEL[label]} loads only: ${window.map((w) => `${w.e} ${(w.fromMs / 1000).toFixed(1)}–${(w.toMs / 1000).toFixed(1)} s`).join(', ')}` : '';
      process.stdout.write(`\n## CPU profile: ${LABEL[label]} (${relative(ROOT, join(profileDir, file))})${span}\n\n${formatSummary(summary, 25)}\n`);
    }
  }
  log(`done in ${((Date.now() - began) / 1000).toFixed(0)} s`);
}

session.run(main);
