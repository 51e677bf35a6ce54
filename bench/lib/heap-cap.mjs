// The Node flags the image's start script (apps/api/scripts/node-with-heap-limit.sh) would give the
// API inside a container limited as deploy/kubernetes/deployment.yaml limits it: the script itself
// is run against a fake cgroup file holding the manifest's limit, and asked for its Node's flags.
// Used by run.mjs (BENCH_HEAP_FROM_MANIFEST=1) and soak.mjs (SOAK_HEAP_FROM_MANIFEST=1).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from './util.mjs';

const LAUNCHER = join(ROOT, 'apps/api/scripts/node-with-heap-limit.sh');
const DEPLOYMENT = join(ROOT, 'deploy/kubernetes/deployment.yaml');
const UNITS = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, K: 1e3, M: 1e6, G: 1e9, '': 1 };

/** The Deployment's container memory limit: `{ text: '384Mi', bytes }`. */
export function manifestMemoryLimit() {
  const deployment = parseAllDocuments(readFileSync(DEPLOYMENT, 'utf8'))
    .map((d) => d.toJS())
    .find((d) => d?.kind === 'Deployment');
  const text = deployment?.spec?.template?.spec?.containers?.[0]?.resources?.limits?.memory;
  const m = /^(\d+)(Ki|Mi|Gi|K|M|G|)$/.exec(String(text));
  if (!m) throw new Error(`deploy/kubernetes/deployment.yaml: no readable memory limit (got ${text})`);
  return { text, bytes: Number(m[1]) * UNITS[m[2]] };
}

/** `{ limit, flags }`: the flags (e.g. ['--max-old-space-size=192']) the start script gives Node under the manifest's limit. */
export function heapFlagsFromManifest() {
  const limit = manifestMemoryLimit();
  const dir = mkdtempSync(join(os.tmpdir(), 'prospect-cgroup-'));
  try {
    writeFileSync(join(dir, 'memory.max'), `${limit.bytes}\n`);
    const res = spawnSync('sh', [LAUNCHER, '-p', "process.execArgv.filter((a) => a.startsWith('--max-')).join(' ')"], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, PROSPECT_CGROUP_ROOT: dir },
    });
    if (res.status !== 0) throw new Error(`${LAUNCHER}: ${res.stderr || `exit ${res.status}`}`);
    return { limit, flags: res.stdout.trim().split(/\s+/).filter(Boolean) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
