// Small helpers shared by bench/run.mjs and bench/soak.mjs.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = join(BENCH_DIR, '..');
// BENCH_API_MAIN: another build of the API (e.g. a copy of dist/ from before a change) for an A/B.
export const API_MAIN = process.env.BENCH_API_MAIN ? resolve(process.env.BENCH_API_MAIN) : join(ROOT, 'apps/api/dist/main.js');
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** `(name, fallback) => number` over `env`: unset or empty gives the fallback, anything not a non-negative number throws. */
export function envNumbers(env) {
  return (name, fallback) => {
    const v = env[name];
    if (v === undefined || v === '') return fallback;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number (got ${JSON.stringify(v)})`);
    return n;
  };
}

export const isYes = (v) => ['1', 'true', 'yes'].includes(v ?? '');
export const isNo = (v) => ['0', 'false', 'no'].includes(v ?? '');

/** A logger writing `[tag] message` lines to stderr. */
export const makeLog = (tag) => (msg) => process.stderr.write(`[${tag}] ${msg}\n`);

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

export const fmt = (n, d = 0) =>
  n === undefined || Number.isNaN(n) ? '–' : n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
