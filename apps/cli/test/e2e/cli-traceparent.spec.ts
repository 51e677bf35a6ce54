/**
 * W3C trace context on every request (docs/operations.md, "Traces"): one command is one trace,
 * each request a span of its own; a valid TRACEPARENT in the environment makes the command part
 * of the caller's trace (its flags kept), an invalid one is ignored.
 * The built binary as a person or a script runs it (see ../support/run-cli.ts).
 */
import { assertBuilt, makeSandbox, type Sandbox } from '../support/run-cli.js';
import { deviceStart, fakeBackend, json, user } from '../support/fake-backend.js';

const TRACEPARENT = /^00-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

let box: Sandbox;
let backend: Awaited<ReturnType<typeof fakeBackend>>;
beforeAll(assertBuilt);
beforeEach(async () => {
  box = await makeSandbox();
  let polls = 0;
  backend = await fakeBackend({
    'GET /api/cli/auth/me': (_q, _b, res) => json(res, 200, { user, expiresAt: '2030-01-01T00:00:00.000Z' }),
    'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, deviceStart(backend.url)),
    'POST /api/cli/auth/device/poll': (_q, _b, res) =>
      json(res, 200, ++polls < 2 ? { status: 'pending' } : { status: 'authorized', accessToken: 'prs_device', expiresAt: '2030-01-01T00:00:00.000Z', user }),
  });
});
afterEach(async () => {
  await backend.close();
  await box.cleanup();
});

/** The trace context of each request the backend received, in order. */
const received = () =>
  backend.requests.map(({ headers }) => {
    const match = TRACEPARENT.exec(String(headers.traceparent));
    if (!match) throw new Error(`not a traceparent: ${String(headers.traceparent)}`);
    return { traceId: match[1]!, spanId: match[2]!, flags: match[3]! };
  });

const me = (env: Record<string, string> = {}) => box.run(['api', '/api/cli/auth/me'], { env: { PROSPECT_TOKEN: `prs_${'a'.repeat(43)}`, PROSPECT_API_BASE_URL: backend.url, ...env } });

describe('traceparent', () => {
  it('one command is one trace: every request of a device login carries it, each with a span id of its own', async () => {
    const run = await box.run(['auth:login', '--api-url', backend.url]);
    expect(run.code).toBe(0);
    const contexts = received();
    expect(contexts.length).toBeGreaterThanOrEqual(3); // start and two polls
    expect(new Set(contexts.map((c) => c.traceId)).size).toBe(1);
    expect(new Set(contexts.map((c) => c.spanId)).size).toBe(contexts.length);
    expect(contexts.every((c) => c.flags === '01' && !/^0+$/.test(c.traceId) && !/^0+$/.test(c.spanId))).toBe(true);
  });

  it('another command is another trace', async () => {
    expect((await me()).code).toBe(0);
    expect((await me()).code).toBe(0);
    const [first, second] = received();
    expect(first!.traceId).not.toBe(second!.traceId);
  });

  it("joins the caller's trace from TRACEPARENT, with a new span id and the caller's flags", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    expect((await me({ TRACEPARENT: `00-${traceId}-${callerSpan}-00` })).code).toBe(0);
    const [sent] = received();
    expect(sent).toEqual({ traceId, spanId: expect.not.stringMatching(new RegExp(`^(${callerSpan}|0+)$`)), flags: '00' });
  });

  it('takes a later version of traceparent by its first four fields', async () => {
    const traceId = 'a'.repeat(32);
    expect((await me({ TRACEPARENT: `cc-${traceId}-${'b'.repeat(16)}-01-what-comes-later` })).code).toBe(0);
    expect(received()[0]).toMatchObject({ traceId, flags: '01' });
  });

  it.each([
    ['upper-case hex', `00-${'A'.repeat(32)}-${'b'.repeat(16)}-01`],
    ['a trace id of zeros', `00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`],
    ['a parent id of zeros', `00-${'a'.repeat(32)}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${'a'.repeat(32)}-${'b'.repeat(16)}-01`],
    ['version 00 with a fifth field', `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01-x`],
    ['a short trace id', `00-${'a'.repeat(31)}-${'b'.repeat(16)}-01`],
    ['not one at all', 'hello'],
  ])('ignores a TRACEPARENT with %s, and starts a trace of its own', async (_what, given) => {
    const run = await me({ TRACEPARENT: given });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const [sent] = received();
    expect(given.toLowerCase()).not.toContain(sent!.traceId);
    expect(sent!.flags).toBe('01');
  });

  it('-H traceparent replaces the one the CLI would send', async () => {
    const given = `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01`;
    const run = await box.run(['api', '/api/cli/auth/me', '-H', `traceparent: ${given}`], { env: { PROSPECT_TOKEN: `prs_${'a'.repeat(43)}`, PROSPECT_API_BASE_URL: backend.url } });
    expect(run.code).toBe(0);
    expect(backend.requests[0]!.headers.traceparent).toBe(given);
  });
});
