// Reads a V8 .cpuprofile (node --cpu-prof) and aggregates where the CPU went:
// self time by function (name + file:line), self time by package, and inclusive
// time by package (a sample counts for every package on its stack).
//
//   node bench/profile-summary.mjs <file.cpuprofile> [--top 25] [--from-ms 5000] [--to-ms 18000]
//
// --from-ms/--to-ms keep only samples in that window, measured from the start of
// the profile (about when the process started).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const META = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

function shortUrl(url) {
  if (!url) return '';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm !== -1) return url.slice(nm + '/node_modules/'.length);
  const apps = url.search(/\/(apps|libs|bench)\//);
  if (apps !== -1) return url.slice(apps + 1);
  return url.replace(/^file:\/\//, '');
}

/** Which package (or part of Node, or of this repository) a frame belongs to. */
export function packageOf(frame) {
  const { url, functionName } = frame;
  if (!url) return META.has(functionName) ? functionName : '(native / V8 builtins)';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) {
    const m = /^node:(?:internal\/)?([^/]+)/.exec(url);
    return `node:${m ? m[1] : url.slice(5)}`;
  }
  const repo = /\/(apps\/[^/]+|libs\/[^/]+|bench)\//.exec(url);
  if (repo) return repo[1];
  return shortUrl(url);
}

/**
 * @param profile the parsed .cpuprofile
 * @param options.windows [{fromMs, toMs}] relative to the profile's start; samples outside are dropped
 */
export function summarizeProfile(profile, { windows } = {}) {
  const byId = new Map();
  const parent = new Map();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const self = new Map();
  const pkgSelf = new Map();
  const pkgIncl = new Map();
  let total = 0;
  let busy = 0;
  let t = profile.startTime;
  const add = (map, key, w) => map.set(key, (map.get(key) ?? 0) + w);
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    const w = profile.timeDeltas[i + 1] ?? 0; // until the next sample
    const relMs = (t - profile.startTime) / 1000;
    if (windows && !windows.some((win) => relMs >= win.fromMs && relMs <= win.toMs)) continue;
    const node = byId.get(profile.samples[i]);
    const f = node.callFrame;
    total += w;
    if (f.functionName === '(idle)') continue;
    busy += w;
    const key = `${f.functionName || '(anonymous)'}  ${shortUrl(f.url)}${f.url ? `:${f.lineNumber + 1}` : ''}`;
    add(self, key, w);
    add(pkgSelf, packageOf(f), w);
    const seen = new Set();
    for (let id = node.id; id !== undefined; id = parent.get(id)) {
      const p = packageOf(byId.get(id).callFrame);
      if (p === '(root)' || seen.has(p)) continue;
      seen.add(p);
      add(pkgIncl, p, w);
    }
  }
  const sorted = (m) => [...m.entries()].sort((a, b) => b[1] - a[1]).map(([key, us]) => ({ key, ms: us / 1000, pct: busy ? (100 * us) / busy : 0 }));
  return { totalMs: total / 1000, busyMs: busy / 1000, self: sorted(self), packagesSelf: sorted(pkgSelf), packagesInclusive: sorted(pkgIncl) };
}

export function formatSummary(s, top = 25) {
  const row = (r) => `| ${r.key.replace(/\|/g, '\\|')} | ${r.ms.toFixed(0)} | ${r.pct.toFixed(1)} % |`;
  return [
    `Samples cover ${s.totalMs.toFixed(0)} ms, of which ${s.busyMs.toFixed(0)} ms busy (not idle); percentages are of busy time.`,
    '',
    `Top ${top} functions by self time:`,
    '',
    '| function  file:line | self ms | share |',
    '|---|---:|---:|',
    ...s.self.slice(0, top).map(row),
    '',
    'Self time by package:',
    '',
    '| package | self ms | share |',
    '|---|---:|---:|',
    ...s.packagesSelf.slice(0, 20).map(row),
    '',
    'Inclusive time by package (on the stack):',
    '',
    '| package | ms | share |',
    '|---|---:|---:|',
    ...s.packagesInclusive.slice(0, 25).map(row),
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const opt = (name, fallback) => {
    const i = args.indexOf(`--${name}`);
    return i === -1 ? fallback : Number(args.splice(i, 2)[1]);
  };
  const top = opt('top', 25);
  const fromMs = opt('from-ms', undefined);
  const toMs = opt('to-ms', undefined);
  const file = args[0];
  if (!file) {
    process.stderr.write('usage: node bench/profile-summary.mjs <file.cpuprofile> [--top N] [--from-ms MS] [--to-ms MS]\n');
    process.exit(2);
  }
  const windows = fromMs !== undefined || toMs !== undefined ? [{ fromMs: fromMs ?? 0, toMs: toMs ?? Infinity }] : undefined;
  process.stdout.write(formatSummary(summarizeProfile(JSON.parse(readFileSync(file, 'utf8')), { windows }), top));
}
