// `prospect auth:whoami` wall time against `node -e 0`, median of N runs each,
// alternating the two so machine noise hits both alike. Prints one JSON line
// (for bench/run.mjs) and a readable summary.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const runs = Number(process.env.BENCH_CLI_RUNS ?? 21);
const cli = fileURLToPath(new URL('../../apps/cli/bin/prospect.cjs', import.meta.url));
const configDir = mkdtempSync(join(tmpdir(), 'prospect-bench-cli-'));
writeFileSync(
  join(configDir, 'auth-session.json'),
  JSON.stringify({
    accessToken: `prs_${'a'.repeat(43)}`,
    apiBaseUrl: 'http://localhost:3000',
    user: { id: 'bench', email: 'bench@example.com', name: 'Bench' },
    expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    createdAt: new Date().toISOString(),
  }),
  { mode: 0o600 },
);

function time(args, env) {
  const start = process.hrtime.bigint();
  const res = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (res.status !== 0) throw new Error(`${args.join(' ')} exited ${res.status}: ${res.stderr}`);
  return ms;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  const whoami = [];
  const baseline = [];
  time([cli, 'auth:whoami'], { PROSPECT_CONFIG_DIR: configDir }); // warm the file cache
  for (let i = 0; i < runs; i++) {
    baseline.push(time(['-e', '0'], {}));
    whoami.push(time([cli, 'auth:whoami'], { PROSPECT_CONFIG_DIR: configDir }));
  }
  const result = { runs, whoamiMs: median(whoami), nodeMs: median(baseline) };
  result.ratio = result.whoamiMs / result.nodeMs;
  console.log(JSON.stringify(result));
  console.error(
    `prospect auth:whoami ${result.whoamiMs.toFixed(1)} ms vs node -e 0 ${result.nodeMs.toFixed(1)} ms (median of ${runs}): ${result.ratio.toFixed(2)}× (target ≤ 1.5×)`,
  );
} finally {
  rmSync(configDir, { recursive: true, force: true });
}
