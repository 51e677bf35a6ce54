// Summarizes a sampling heap profile (.heapprofile: V8's HeapProfiler.stopSampling, as
// bench/lib/alloc-probe.mjs takes it with collected objects included): bytes allocated by
// function (self) and by package, as shares of all sampled bytes.
//
//   node bench/heap-profile-summary.mjs bench/results/profiles/heap-api-me-….heapprofile [--top 30] [--requests N]
//
// With --requests, the figures are also given per request (the runner passes the answers of the window).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const packageOf = (url) => {
  if (!url) return '(native / V8 builtins)';
  if (url.startsWith('node:')) return url.replace(/^node:(internal\/)?/, 'node:').split('/')[0];
  const nm = url.lastIndexOf('/node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + 14).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const m = /\/(apps\/[^/]+|libs\/[^/]+|bench)\//.exec(url);
  return m ? m[1] : url;
};

export function summarizeHeapProfile(profile) {
  const byFunction = new Map();
  const byPackage = new Map();
  let total = 0;
  const walk = (node) => {
    const self = node.selfSize ?? 0;
    if (self) {
      const { functionName, url, lineNumber } = node.callFrame;
      const file = url ? url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*\/(apps|libs|bench)\//, '$1/') : '';
      const key = `${functionName || '(anonymous)'}  ${file}${url ? `:${lineNumber + 1}` : ''}`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + self);
      const pkg = packageOf(url);
      byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + self);
      total += self;
    }
    for (const child of node.children ?? []) walk(child);
  };
  walk(profile.head);
  const sorted = (m) => [...m.entries()].sort((a, b) => b[1] - a[1]);
  return { total, functions: sorted(byFunction), packages: sorted(byPackage) };
}

export function formatHeapSummary({ total, functions, packages }, top = 25, requests = 0) {
  const per = (b) => (requests ? ` | ${(b / requests).toFixed(0)}` : '');
  const head = requests ? ' | bytes/req' : '';
  const rule = requests ? '---:|' : '';
  const lines = [`Sampled ${(total / 2 ** 20).toFixed(1)} MiB allocated${requests ? ` over ${requests} answers: ${(total / requests / 1024).toFixed(1)} KiB/req` : ''}.`, ''];
  lines.push(`| function  file:line | KiB | share${head} |`, `|---|---:|---:|${rule}`);
  for (const [k, b] of functions.slice(0, top)) lines.push(`| ${k} | ${(b / 1024).toFixed(0)} | ${((100 * b) / total).toFixed(1)} %${per(b)} |`);
  lines.push('', `| package | KiB | share${head} |`, `|---|---:|---:|${rule}`);
  for (const [k, b] of packages.slice(0, top)) lines.push(`| ${k} | ${(b / 1024).toFixed(0)} | ${((100 * b) / total).toFixed(1)} %${per(b)} |`);
  return `${lines.join('\n')}\n`;
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const file = args.find((a) => !a.startsWith('--') && !/^\d+$/.test(a));
  const opt = (name, d) => {
    const i = args.indexOf(name);
    return i === -1 ? d : Number(args[i + 1]);
  };
  if (!file) {
    process.stderr.write('usage: node bench/heap-profile-summary.mjs <file.heapprofile> [--top N] [--requests N]\n');
    process.exit(2);
  }
  process.stdout.write(formatHeapSummary(summarizeHeapProfile(JSON.parse(readFileSync(file, 'utf8'))), opt('--top', 30), opt('--requests', 0)));
}
