// Bench-only: preloaded into a server under test (`node --import bench/lib/alloc-probe.mjs …`)
// so the bench can ask that process how much it allocated and how long it collected garbage
// over a measured window. Never part of the product: no route is added to the server itself;
// the probe listens on a port of its own (BENCH_PROBE_PORT, loopback only) and does nothing
// at all when that variable is unset.
//
//   GET /start  begins a window: V8's GC profiler on, the used heap noted
//   GET /stop   ends it: { allocatedBytes, gcMs, gcCount, fullGcCount, windowMs, usedHeapBytes, heapLimitBytes }
//   GET /sample/start, GET /sample/stop   V8's sampling heap profiler over a window, collected
//               objects included (where the bytes of a request are allocated, not what stays):
//               /sample/stop answers the profile (a .heapprofile, for DevTools or
//               bench/heap-profile-summary.mjs)
//
// Bytes allocated over the window = (used heap at the end − used heap at the start) + what every
// collection in between freed (its used heap before − after, from v8.GCProfiler): V8 keeps no
// running total of allocations, but whatever was allocated is either still there or was freed
// by one of those collections. `gcMs` is the sum of the collections' own cost (main thread).
import http from 'node:http';
import { Session } from 'node:inspector/promises';
import v8 from 'node:v8';

const port = Number(process.env.BENCH_PROBE_PORT);

if (port) {
  let window;
  let inspector;
  const server = http.createServer(async (req, res) => {
    const answer = (status, body) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/start') {
      window?.profiler.stop();
      const profiler = new v8.GCProfiler();
      profiler.start();
      window = { profiler, startedAt: performance.now(), usedAtStart: v8.getHeapStatistics().used_heap_size };
      return answer(200, { ok: true });
    }
    if (req.url === '/stop') {
      if (!window) return answer(409, { error: 'no window started' });
      const { profiler, startedAt, usedAtStart } = window;
      window = undefined;
      const usedAtEnd = v8.getHeapStatistics().used_heap_size;
      const windowMs = performance.now() - startedAt;
      const { statistics } = profiler.stop();
      let freed = 0;
      let costUs = 0;
      let fullGcCount = 0;
      for (const gc of statistics) {
        freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
        costUs += gc.cost;
        if (gc.gcType === 'MarkSweepCompact') fullGcCount++;
      }
      const stats = v8.getHeapStatistics();
      return answer(200, {
        allocatedBytes: usedAtEnd - usedAtStart + freed,
        gcMs: costUs / 1000,
        gcCount: statistics.length,
        fullGcCount,
        windowMs,
        usedHeapBytes: stats.used_heap_size,
        heapLimitBytes: stats.heap_size_limit,
      });
    }
    if (req.url === '/sample/start') {
      if (!inspector) {
        inspector = new Session();
        inspector.connect();
      }
      await inspector.post('HeapProfiler.enable').catch(() => undefined);
      await inspector.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      return answer(200, { ok: true });
    }
    if (req.url === '/sample/stop') {
      if (!inspector) return answer(409, { error: 'no sampling started' });
      const { profile } = await inspector.post('HeapProfiler.stopSampling');
      return answer(200, profile);
    }
    answer(404, { error: 'GET /start, /stop, /sample/start or /sample/stop' });
  });
  server.listen(port, '127.0.0.1');
  // The probe must never keep a server alive that is shutting down.
  server.unref();
}
