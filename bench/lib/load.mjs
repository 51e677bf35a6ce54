// One autocannon load and what the reports keep of it. Shared by bench/run.mjs and bench/growth.mjs.
import autocannon from 'autocannon';

/** `load.request` against `url` for `seconds` over `connections` (at `rate` req/s overall when set); bounded, whatever happens to the server. */
export function cannon(url, load, seconds, { connections, rate = 0 }) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      { url, connections, duration: seconds, requests: [load.request], timeout: 10, ...(rate ? { overallRate: rate } : {}) },
      (err, result) => {
        clearTimeout(guard);
        if (err) reject(err);
        else resolve(result);
      },
    );
    const guard = setTimeout(() => instance.stop(), (seconds + 20) * 1000);
  });
}

export function summarizeRun(result) {
  const codes = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([k, v]) => [k, v.count]));
  return {
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    max: result.latency.max,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    codes,
  };
}
