// The soak's report: per-minute table, the three targets' verdict, as Markdown. Kept apart from
// soak.mjs, which drives the load; this only formats what it measured.
import os from 'node:os';
import { fmt, median } from './util.mjs';

const TARGETS = { rssGrowth: 0.1, p99Factor: 1.5 };
/** A percentile of an hdr histogram of microseconds, in ms. */
export const pct = (hist, p) => (hist.totalCount ? hist.getValueAtPercentile(p) / 1000 : undefined);
export const mib = (b) => (b === undefined ? '–' : fmt(b / 2 ** 20, 1));
const ms = (x) => fmt(x, 1);
const nonOk = (r) => `${fmt(r.non2xx)}${r.non2xx ? ` (${Object.entries(r.codes).map(([c, n]) => `${c}×${fmt(n)}`).join(', ')})` : ''}`;

function judge(run, { MINUTES, ROUTE_NAMES }) {
  const { minutes, totals } = run;
  const checks = [];
  const errorCount = totals.errors + totals.timeouts + totals.s5xx;
  checks.push({
    ok: errorCount === 0,
    text: `0 errors: ${fmt(totals.errors)} socket errors, ${fmt(totals.timeouts)} timeouts, ${fmt(totals.s5xx)} 5xx answers`,
  });
  const last = minutes[MINUTES - 1];
  if (MINUTES < 2) {
    checks.push({ ok: undefined, text: `RSS growth ≤ ${TARGETS.rssGrowth * 100} % after the warm-up minute: not judged (the run has no minute after the warm-up)` });
    checks.push({ ok: undefined, text: `p99 flat: not judged (the run has no minute after the warm-up)` });
    return checks;
  }
  const from = minutes[0].rssEnd;
  const to = last.rssEnd;
  const growth = from && to ? to / from - 1 : undefined;
  checks.push({
    ok: growth === undefined ? undefined : growth <= TARGETS.rssGrowth,
    text: `RSS growth ≤ ${TARGETS.rssGrowth * 100} % from the end of minute 1 (warm-up) to the end: ${mib(from)} → ${mib(to)} MiB (${growth === undefined ? '–' : `${growth >= 0 ? '+' : ''}${(growth * 100).toFixed(1)} %`})`,
  });
  const after = minutes.slice(1);
  const parts = ROUTE_NAMES.map((route) => {
    const p99s = after.map((m) => pct(m.routes[route].hist, 99)).filter((x) => x !== undefined);
    const lastP99 = pct(last.routes[route].hist, 99);
    if (!p99s.length || lastP99 === undefined) return { route, ok: undefined, text: `${route}: no answers` };
    const med = median(p99s);
    return { route, ok: lastP99 <= TARGETS.p99Factor * med, text: `${route} ${ms(lastP99)} ms vs median ${ms(med)} ms (${(lastP99 / med).toFixed(2)}×)` };
  });
  const judged = parts.filter((p) => p.ok !== undefined);
  checks.push({
    ok: judged.length ? judged.every((p) => p.ok) : undefined,
    text:
      `p99 flat per route: the last minute's p99 ≤ ${TARGETS.p99Factor}× the median of the per-minute p99s after the warm-up ` +
      `(minute${after.length > 1 ? `s 2–${MINUTES}` : ' 2'}): ${parts.map((p) => `${p.ok === undefined ? '–' : p.ok ? '✓' : '✗'} ${p.text}`).join('; ')}` +
      (after.length === 1 ? ' (with one minute after the warm-up, that minute is compared with itself)' : ''),
  });
  return checks;
}

/**
 * @param shape what soak.mjs resolved: its settings, the run's minutes and seconds, the request
 *   timeout and the routes of the mix.
 */
export function report({ settings, MINUTES, DURATION_S, TIMEOUT_S, ROUTE_NAMES }, { info, run, rssAfterStart, hwm, logLines, db, apiExit, date }) {
  const lines = [];
  const out = (s = '') => lines.push(s);
  const { minutes, totals } = run;
  const checks = judge(run, { MINUTES, ROUTE_NAMES });
  const verdict = checks.some((c) => c.ok === false) ? 'missed' : checks.every((c) => c.ok) ? 'met' : 'incomplete';
  const minGapS = settings.pollIntervalS - 1;
  const ended = new Date(run.startedAt.getTime() + run.seconds * 1000);

  out(`# Soak ${date}`);
  out();
  out(`- Date: load from ${run.startedAt.toISOString().slice(0, 19)}Z to ${ended.toISOString().slice(0, 19)}Z (${fmt(run.seconds / 60, 1)} min)`);
  out(`- Machine: ${info.cpus} × ${info.model}, ${info.memGiB} GiB RAM, ${info.kernel}; 1-minute load average ${info.loadBefore} before the run, ${os.loadavg()[0].toFixed(2)} after`);
  out(`- Node ${info.node}; ${info.postgres}; commit ${info.commit}`);
  out(
    `- Load: one autocannon instance in the runner's process, ${settings.connections} connections, ${fmt(DURATION_S)} s, as fast as the API answers (timeout ${TIMEOUT_S} s); ` +
      `every request picks its route by smooth weighted round-robin, so each run of 10 requests sent is exactly 7 \`/me\`, 2 \`poll\`, 1 \`start\``,
  );
  out(
    `- Data: 1 user, ${fmt(settings.tokens)} access tokens (\`/me\` rotates over all of them), ${fmt(settings.deviceCodes)} pending device logins (\`poll\` rotates over them); ` +
      `DEVICE_POLL_INTERVAL_SECONDS=${settings.pollIntervalS}${settings.pollIntervalS === 5 ? ' (production default)' : ''}` +
      (minGapS > 0
        ? `, so a code may be polled again after ${minGapS} s; the shortest gap between two polls of one code was ${Number.isFinite(run.minPollGapMs) ? `${fmt(run.minPollGapMs / 1000, 1)} s` : '– (no code came round twice)'}`
        : ', which with the 1 s jitter allowance throttles no poll'),
  );
  out(
    `- API: \`node ${settings.apiNodeFlags.length ? `${settings.apiNodeFlags.join(' ')} ` : ''}apps/api/dist/main.js\`${settings.manifestLimit ? ` (the heap flag the image's start script gives it under deploy/kubernetes' memory limit, ${settings.manifestLimit})` : ''}, NODE_ENV=production, LOG_LEVEL=info, request log to a file (${fmt(logLines)} lines written), DATABASE_URL pool of 10; ` +
      `stopped with SIGTERM after the load: ${apiExit}`,
  );
  if (db) out(`- Database: ${mib(db.sizeBefore)} MiB before the load, ${mib(db.sizeAfter)} MiB after; ${fmt(db.deviceLogins)} device logins, ${fmt(db.authEvents)} auth events at the end`);
  out();
  out(
    '| minute | s | req/s | `/me` | `poll` | `start` | non-2xx `/me` / `poll` / `start` | errors | timeouts | `/me` p50 / p99 ms | `poll` p50 / p99 ms | `start` p50 / p99 ms | RSS at end / max MiB | CPU µs/req |',
  );
  out('|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|');
  const row = (label, s, seconds, rss, cpuUs) => {
    const r = s.routes;
    const lat = (x) => `${ms(pct(x.hist, 50))} / ${ms(pct(x.hist, 99))}`;
    return `| ${label} | ${fmt(seconds)} | ${fmt(s.n / seconds)} | ${fmt(r.me.n)} | ${fmt(r.poll.n)} | ${fmt(r.start.n)} | ${ROUTE_NAMES.map((x) => nonOk(r[x])).join(' / ')} | ${fmt(s.errors)} | ${fmt(s.timeouts)} | ${lat(r.me)} | ${lat(r.poll)} | ${lat(r.start)} | ${rss} | ${fmt(cpuUs)} |`;
  };
  minutes.forEach((m, i) => out(row(`${i + 1}${i === 0 ? ' (warm-up)' : ''}`, m, m.seconds, `${mib(m.rssEnd)} / ${mib(m.rssMax || undefined)}`, m.cpuUs)));
  const cpuAll = minutes.every((m) => m.cpuUs !== undefined) ? minutes.reduce((a, m) => a + m.cpuUs * m.n, 0) / (totals.n || 1) : undefined;
  out(row('**all**', totals, run.seconds, `peak ${mib(hwm)}`, cpuAll));
  out();
  out(
    `Requests are answers received; non-2xx, p50 and p99 count every answer of the route (status codes in brackets); errors are socket errors; a timeout is a request unanswered after ${TIMEOUT_S} s. ` +
      'Latency is measured by the runner from the moment a request is written until its answer is complete, per route, in a histogram per minute. ' +
      'RSS is `VmRSS` of the API process at the end of each minute and the highest of its samples taken every second in the minute ("peak" is `VmHWM`, over the whole process lifetime); CPU is the API process\'s user + system time in the minute divided by its answers.',
  );
  out();
  const share = (r) => (totals.n ? `${((totals.routes[r].n / totals.n) * 100).toFixed(1)} %` : '–');
  out(`- Mix answered: \`/me\` ${share('me')}, \`poll\` ${share('poll')}, \`start\` ${share('start')}`);
  out(
    `- RSS: ${mib(rssAfterStart)} MiB once started, before seeding and load; ${mib(minutes[0].rssEnd)} MiB at the end of minute 1; ${mib(minutes[MINUTES - 1].rssEnd)} MiB at the end; ` +
      `1 s samples from ${mib(Math.min(...run.rssSamples))} to ${mib(Math.max(...run.rssSamples))} MiB; peak (VmHWM) ${mib(hwm)} MiB`,
  );
  const slowDown = totals.routes.poll.codes['429'] ?? 0;
  out(`- Poll throttling: ${fmt(slowDown)} slow_down (429) answers (expected 0)`);
  out(
    `- Cross-check with autocannon's own totals: ${fmt(run.autocannon.total)} answers, ${fmt(run.autocannon.non2xx)} non-2xx, ${fmt(run.autocannon.errors)} errors (timeouts included), ${fmt(run.autocannon.timeouts)} timeouts` +
      (run.unattributed ? `; ${fmt(run.unattributed)} events could not be attributed to a route` : ''),
  );
  if (run.errorMessages.size) out(`- Socket errors: ${[...run.errorMessages].map(([k, n]) => `${k} ×${n}`).join(', ')}`);
  out(
    `- The runner's own event loop (autocannon and this script share the machine's cores with the API and Postgres): delay p99 ${ms(run.loopDelay.p99)} ms, max ${ms(run.loopDelay.max)} ms`,
  );
  out();
  out(`## Verdict: ${verdict}`);
  out();
  for (const c of checks) out(`- ${c.ok === undefined ? '–' : c.ok ? '✓' : '✗'} ${c.text}`);
  out();
  out(
    `Targets: no socket error, no timeout, no 5xx answer over the whole run; the API's RSS at the end of the run at most ${TARGETS.rssGrowth * 100} % above its RSS at the end of minute 1 (the warm-up); ` +
      `and each route's p99 "flat", defined as: the last minute's p99 no more than ${TARGETS.p99Factor}× the median of the per-minute p99s after the warm-up (minutes 2 to the last, the last included). ` +
      '`met` only if all three are; `incomplete` if one could not be judged (a run shorter than 2 minutes).',
  );
  return { md: `${lines.join('\n')}\n`, verdict };
}

