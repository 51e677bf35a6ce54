// Preloaded into a `prospect` process (NODE_OPTIONS=--require …) to put its clock
// PROSPECT_TEST_CLOCK_SKEW_MS off the real one, as on a machine whose clock is wrong: Date.now()
// and new Date() move; timers, file times written by the kernel and the server do not.
'use strict';
const skewMs = Number(process.env.PROSPECT_TEST_CLOCK_SKEW_MS);
if (!Number.isFinite(skewMs)) throw new Error('skewed-clock.cjs needs PROSPECT_TEST_CLOCK_SKEW_MS (milliseconds, negative: behind)');
const RealDate = Date;
function SkewedDate(...args) {
  // Called without `new`, Date() is the current time as a string.
  if (!new.target) return new RealDate(RealDate.now() + skewMs).toString();
  return args.length === 0 ? new RealDate(RealDate.now() + skewMs) : new RealDate(...args);
}
SkewedDate.prototype = RealDate.prototype;
SkewedDate.now = () => RealDate.now() + skewMs;
SkewedDate.parse = RealDate.parse;
SkewedDate.UTC = RealDate.UTC;
globalThis.Date = SkewedDate;
