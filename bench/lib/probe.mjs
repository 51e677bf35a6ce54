// The runner's side of bench/lib/alloc-probe.mjs: the Node flags and environment that preload
// it into a server, and the calls that open and close a measured window.
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { freePort } from './processes.mjs';
import { BENCH_DIR } from './util.mjs';

const PROBE = pathToFileURL(join(BENCH_DIR, 'lib/alloc-probe.mjs')).href;

/** `{ port, nodeArgs, env }` for one server: preload the probe, listening on a free loopback port. */
export async function probeFor() {
  const port = await freePort();
  return { port, nodeArgs: ['--import', PROBE], env: { BENCH_PROBE_PORT: String(port) } };
}

async function call(port, what) {
  const res = await fetch(`http://127.0.0.1:${port}/${what}`, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`alloc probe /${what}: ${res.status}`);
  return res.json();
}

/** Begins a window; the returned function ends it and resolves to the probe's figures (undefined if the probe did not answer). */
export async function openWindow(port) {
  try {
    await call(port, 'start');
  } catch {
    return async () => undefined;
  }
  return () => call(port, 'stop').catch(() => undefined);
}

/** V8's sampling heap profiler over a window (collected objects included); the returned function ends it and resolves to the profile. */
export async function openHeapSampling(port) {
  await call(port, 'sample/start');
  return () => call(port, 'sample/stop');
}
