import { ApiClient } from '../src/api-client/api-client.js';
import {
  DeviceLoginClient,
  DeviceLoginDeniedError,
  DeviceLoginTimeoutError,
  DeviceLoginUnsupportedError,
  NotProspectServerError,
  normalizeStartResponse,
  type Timing,
  type WaitEvent,
} from '../src/device-login/device-login-client.js';
import { fakeBackend, inAnHour, json, user } from './support/fake-backend.js';
import { fakeTiming } from './support/fake-timing.js';

const start = { deviceCode: 'prsd_x', userCode: 'BCDF-GHJK', verificationUrl: 'http://id.example.com/device?user_code=BCDF-GHJK', intervalSeconds: 5, expiresInSeconds: 600 };

describe('normalizeStartResponse (seed §2.2)', () => {
  it('accepts verificationUri in place of verificationUrl', () => {
    const { verificationUrl, ...rest } = start;
    expect(normalizeStartResponse({ ...rest, verificationUri: verificationUrl })).toEqual(start);
  });

  it.each([
    ['no address', { ...start, verificationUrl: undefined }, /malformed \(verificationUrl\)/],
    ['no device code', { ...start, deviceCode: undefined }, /malformed \(deviceCode\)/],
    ['no user code', { ...start, userCode: '' }, /malformed \(userCode\)/],
    ['a javascript: address', { ...start, verificationUrl: 'javascript:alert(1)' }, /not an http\(s\) address/],
    ['a file: address', { ...start, verificationUrl: 'file:///etc/passwd' }, /not an http\(s\) address/],
  ])('refuses a start response with %s', (_, body, message) => {
    expect(() => normalizeStartResponse(body)).toThrow(message);
  });
});

describe('DeviceLoginClient', () => {
  let backend: Awaited<ReturnType<typeof fakeBackend>> | undefined;
  afterEach(() => backend?.close());

  const client = (timing: Timing) => new DeviceLoginClient(new ApiClient({ baseUrl: backend!.url, timeoutMs: 2_000 }), timing);

  it('tells a server that is not Prospect (a 404 without its error body) from one with device login off', async () => {
    backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_q, _b, res) => {
        res.writeHead(404, { 'content-type': 'text/html' });
        res.end('<h1>Not Found</h1>');
      },
    });
    const err = await client(fakeTiming().timing).start({ clientName: 'c', hostname: 'h' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotProspectServerError);
    expect((err as Error).message).toBe(`${backend.url} is not a Prospect server (it answered HTTP 404 to the device-login start).`);
  });

  it.each([404, 405, 501])('turns %i on start into the browser-login and token-login fallbacks', async (status) => {
    backend = await fakeBackend({ 'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, status, { statusCode: status, error: 'not_found', message: 'no' }) });
    const err = await client(fakeTiming().timing).start({ clientName: 'c', hostname: 'h' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeviceLoginUnsupportedError);
    expect((err as DeviceLoginUnsupportedError).hint).toBe(
      `Log in through your browser: prospect auth:login --api-url ${backend.url} --web; or create a token at ${backend.url}/settings/tokens, then run: prospect auth:login --api-url ${backend.url} --token -`,
    );
    // The default backend needs no --api-url.
    expect(new DeviceLoginUnsupportedError({ baseUrl: 'http://localhost:3000' }).hint).toBe(
      'Log in through your browser: prospect auth:login --web; or create a token at http://localhost:3000/settings/tokens, then run: prospect auth:login --token -',
    );
  });

  it('sends the client name and hostname on start', async () => {
    backend = await fakeBackend({ 'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, start) });
    expect(await client(fakeTiming().timing).start({ clientName: 'prospect CLI', hostname: 'laptop' })).toEqual(start);
    expect(JSON.parse(backend.requests[0]!.body)).toEqual({ clientName: 'prospect CLI', hostname: 'laptop' });
  });

  it('polls every interval until authorized', async () => {
    let polls = 0;
    backend = await fakeBackend({
      'POST /api/cli/auth/device/poll': (_q, _b, res) =>
        ++polls < 3 ? json(res, 200, { status: 'pending' }) : json(res, 200, { status: 'authorized', accessToken: 'prs_t', expiresAt: inAnHour(), user }),
    });
    const { timing, sleeps } = fakeTiming();
    const result = await client(timing).waitForAuthorization(start);
    expect(result).toMatchObject({ accessToken: 'prs_t', user });
    expect(sleeps).toEqual([5000, 5000, 5000]);
    expect(JSON.parse(backend.requests[0]!.body)).toEqual({ deviceCode: 'prsd_x' });
  });

  it('waits 5 s longer after each slow_down (RFC 8628 §3.5)', async () => {
    let polls = 0;
    backend = await fakeBackend({
      'POST /api/cli/auth/device/poll': (_q, _b, res) => {
        polls++;
        if (polls <= 2) return json(res, 429, { statusCode: 429, error: 'slow_down', message: 'slow' }, { 'retry-after': '5' });
        return json(res, 200, polls < 4 ? { status: 'pending' } : { status: 'authorized', accessToken: 'prs_t', expiresAt: inAnHour(), user });
      },
    });
    const { timing, sleeps } = fakeTiming();
    const events: WaitEvent[] = [];
    await client(timing).waitForAuthorization(start, { onEvent: (e) => events.push(e) });
    expect(sleeps).toEqual([5000, 10000, 15000, 15000]);
    expect(events.filter((e) => e.kind === 'slowed-down')).toHaveLength(2);
  });

  it('rides out dropped connections, malformed answers from a proxy and a restarting server, until it succeeds', async () => {
    let polls = 0;
    backend = await fakeBackend({
      'POST /api/cli/auth/device/poll': (req, _b, res) => {
        polls++;
        if (polls === 1) return req.socket.destroy(); // dropped connection
        if (polls === 2) return json(res, 503, { statusCode: 503, error: 'service_unavailable', message: 'restarting' });
        if (polls === 3) {
          res.writeHead(502, { 'content-type': 'text/html' });
          return res.end('<h1>Bad gateway</h1>');
        }
        return json(res, 200, { status: 'authorized', accessToken: 'prs_t', expiresAt: inAnHour(), user });
      },
    });
    const { timing, sleeps } = fakeTiming();
    const events: WaitEvent[] = [];
    await expect(client(timing).waitForAuthorization(start, { onEvent: (e) => events.push(e) })).resolves.toMatchObject({ accessToken: 'prs_t' });
    // Never longer than 5 s between tries, so the login resumes within 5 s of the server's return.
    const reconnects = events.filter((e) => e.kind === 'reconnecting') as Array<Extract<WaitEvent, { kind: 'reconnecting' }>>;
    expect(reconnects.map((e) => e.retryInMs)).toEqual([5000, 5000, 5000]);
    const host = new URL(backend.url).host;
    expect(reconnects.map((e) => e.message)).toEqual([
      `Can't reach ${host}; trying again in 5 s.`,
      `${host} is briefly unavailable; trying again in 5 s.`,
      `${host} is briefly unavailable; trying again in 5 s.`,
    ]);
  });

  it('gives up at its deadline while the server stays away', async () => {
    backend = await fakeBackend({});
    await backend.close();
    const { timing } = fakeTiming();
    const err = await client(timing).waitForAuthorization(start, { timeoutSeconds: 60 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeviceLoginTimeoutError);
    expect((err as DeviceLoginTimeoutError).reason).toBe('timeout');
    backend = undefined;
  });

  it('polls no more once a sleep ran to the deadline, even when the timer fired before the clock got there', async () => {
    backend = await fakeBackend({
      'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 429, { statusCode: 429, error: 'slow_down', message: 'Slow down.' }, { 'retry-after': '60' }),
    });
    let now = 1_000_000;
    // Every timer fires 2 ms early, as one scheduled from a stale event-loop time does.
    const early: Timing = { now: () => now, sleep: async (ms) => void (now += Math.max(0, ms - 2)) };
    await expect(client(early).waitForAuthorization({ ...start, intervalSeconds: 1 }, { timeoutSeconds: 3 })).rejects.toBeInstanceOf(DeviceLoginTimeoutError);
    expect(backend.requests.filter((r) => r.url === '/api/cli/auth/device/poll')).toHaveLength(1);
  });

  it('fails on denied, and tells expiry from its own timeout; each says how to log in to this backend again', async () => {
    backend = await fakeBackend({ 'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'denied' }) });
    const denied = await client(fakeTiming().timing).waitForAuthorization(start).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(DeviceLoginDeniedError);
    expect((denied as DeviceLoginDeniedError).hint).toBe(`Run \`prospect auth:login --api-url ${backend.url}\` to try again.`);
    await backend.close();
    backend = await fakeBackend({ 'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'pending' }) });
    await expect(client(fakeTiming().timing).waitForAuthorization({ ...start, expiresInSeconds: 20 }, { timeoutSeconds: 60 })).rejects.toMatchObject({
      reason: 'expired',
      message: 'The code expired after 20 s without approval.',
      hint: `Run \`prospect auth:login --api-url ${backend.url}\` to get a new code.`,
    });
  });

  it('names the default backend in its hints only when PROSPECT_API_BASE_URL points elsewhere', () => {
    expect(new DeviceLoginDeniedError({ baseUrl: 'http://localhost:3000' }).hint).toBe('Run `prospect auth:login` to try again.');
    expect(new DeviceLoginDeniedError({ baseUrl: 'http://localhost:3000', env: { PROSPECT_API_BASE_URL: 'https://id.example.com' } }).hint).toBe(
      'Run `prospect auth:login --api-url http://localhost:3000` to try again.',
    );
  });

  it('points a malformed start answer to token login on the same backend', async () => {
    backend = await fakeBackend({ 'POST /api/cli/auth/device/start': (_q, _b, res) => json(res, 200, { ...start, userCode: undefined }) });
    await expect(client(fakeTiming().timing).start({ clientName: 'c', hostname: 'h' })).rejects.toMatchObject({
      message: "The server's device-login answer is incomplete or malformed (userCode).",
      hint: `Try \`prospect auth:login --api-url ${backend.url} --token -\` instead.`,
    });
  });

  it('refuses a poll answer of the wrong shape, and malformed JSON', async () => {
    backend = await fakeBackend({ 'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'authorized' }) });
    await expect(client(fakeTiming().timing).waitForAuthorization(start)).rejects.toThrow(/unexpected shape/);
    await backend.close();
    backend = await fakeBackend({ 'POST /api/cli/auth/device/poll': (_q, _b, res) => res.end('{"status": "pend') });
    await expect(client(fakeTiming().timing).waitForAuthorization(start)).rejects.toThrow(/not JSON/);
  });

  it('stops at once when aborted (Ctrl-C)', async () => {
    backend = await fakeBackend({ 'POST /api/cli/auth/device/poll': (_q, _b, res) => json(res, 200, { status: 'pending' }) });
    const controller = new AbortController();
    const timing: Timing = { now: () => Date.now(), sleep: async () => controller.abort(new Error('interrupted')) };
    await expect(client(timing).waitForAuthorization(start, { signal: controller.signal })).rejects.toThrow('interrupted');
  });
});
