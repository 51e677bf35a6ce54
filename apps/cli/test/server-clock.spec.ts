/**
 * The server's clock as the CLI measures it (session/server-clock.ts): from the `Date` of the
 * API's answers, kept per backend beside the session file, written only when it moves.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '../src/api-client/api-client.js';
import { ApiHttpError } from '../src/api-client/api-errors.js';
import { CLOCK_FILE_NAME, ServerClock } from '../src/session/server-clock.js';
import { fakeBackend, json } from './support/fake-backend.js';

let dir: string;
beforeEach(async () => (dir = await mkdtemp(join(tmpdir(), 'prospect-clock-'))));
afterEach(() => rm(dir, { recursive: true, force: true }));

const TEN_MINUTES = 600_000;
/** A local clock that stands still at `at` (ms since the epoch). */
const standingAt = (at: number) => () => at;
const dateHeader = (at: number) => new Headers({ date: new Date(at).toUTCString() });
const LOCAL = Date.parse('2026-03-01T12:00:00.250Z');

describe('ServerClock', () => {
  it('takes the offset from an answer’s Date (whole seconds, stamped between request and answer), and keeps it for the next run', async () => {
    const clock = new ServerClock(dir, standingAt(LOCAL));
    expect(await clock.now('http://api.test')).toBe(LOCAL);
    await clock.observe('http://api.test', dateHeader(LOCAL + TEN_MINUTES), LOCAL - 100, LOCAL + 100);
    // Date says 12:10:00; the server's moment is within that second, so 12:10:00.5 against a local 12:00:00.25.
    expect(await clock.offsetMs('http://api.test')).toBe(TEN_MINUTES + 250);
    expect(await clock.now('http://api.test')).toBe(LOCAL + TEN_MINUTES + 250);

    const nextRun = new ServerClock(dir, standingAt(LOCAL + 5_000));
    expect(await nextRun.now('http://api.test')).toBe(LOCAL + 5_000 + TEN_MINUTES + 250);
    // Per backend: another one's clock is this machine's until measured.
    expect(await nextRun.offsetMs('http://other.test')).toBe(0);
    const saved = JSON.parse(await readFile(join(dir, CLOCK_FILE_NAME), 'utf8'));
    expect(saved).toEqual({ servers: { 'http://api.test': { offsetMs: TEN_MINUTES + 250, measuredAt: new Date(LOCAL).toISOString() } } });
    expect((await stat(join(dir, CLOCK_FILE_NAME))).mode & 0o777).toBe(0o600);
  });

  it('writes nothing for a clock that is right, nor for a measurement within a second or two of the kept one', async () => {
    const clock = new ServerClock(dir, standingAt(LOCAL));
    await clock.observe('http://api.test', dateHeader(LOCAL), LOCAL, LOCAL);
    expect(await readdir(dir)).toEqual([]);
    await clock.observe('http://api.test', dateHeader(LOCAL - TEN_MINUTES), LOCAL, LOCAL);
    const first = await readFile(join(dir, CLOCK_FILE_NAME), 'utf8');
    await clock.observe('http://api.test', dateHeader(LOCAL - TEN_MINUTES + 1_000), LOCAL, LOCAL);
    expect(await readFile(join(dir, CLOCK_FILE_NAME), 'utf8')).toBe(first);
    // …but the run uses its newest measurement.
    expect(await clock.offsetMs('http://api.test')).toBe(-TEN_MINUTES + 1_000 + 250);
    expect(await readdir(dir)).toEqual([CLOCK_FILE_NAME]);
  });

  it('counts a cache’s Age, and ignores an answer without a Date', async () => {
    const clock = new ServerClock(dir, standingAt(LOCAL));
    await clock.observe('http://api.test', new Headers({ date: new Date(LOCAL - 60_000).toUTCString(), age: '60' }), LOCAL, LOCAL);
    expect(await clock.offsetMs('http://api.test')).toBe(250);
    await clock.observe('http://api.test', new Headers({ date: 'yesterday-ish' }), LOCAL, LOCAL);
    await clock.observe('http://api.test', new Headers(), LOCAL, LOCAL);
    expect(await clock.offsetMs('http://api.test')).toBe(250);
  });

  it('a kept file that is not what it should be counts as no offset; a directory that does not exist is not created', async () => {
    await writeFile(join(dir, CLOCK_FILE_NAME), '{"servers": {"http://api.test": {"offsetMs": "soon"}, "__proto__": {"offsetMs": 5, "measuredAt": "2026-01-01T00:00:00Z"}}}');
    expect(await new ServerClock(dir, standingAt(LOCAL)).offsetMs('http://api.test')).toBe(0);
    await writeFile(join(dir, CLOCK_FILE_NAME), 'not json');
    expect(await new ServerClock(dir, standingAt(LOCAL)).offsetMs('http://api.test')).toBe(0);
    const missing = join(dir, 'not-yet');
    const clock = new ServerClock(missing, standingAt(LOCAL));
    await clock.observe('http://api.test', dateHeader(LOCAL + TEN_MINUTES), LOCAL, LOCAL);
    expect(await clock.offsetMs('http://api.test')).toBe(TEN_MINUTES + 250);
    expect(existsSync(missing)).toBe(false);
  });
});

describe('ApiClient tells the server clock of every answer', () => {
  it('a success’s Date and a refusal’s alike', async () => {
    const serverAhead = () => ({ date: new Date(Date.now() + TEN_MINUTES).toUTCString() });
    const backend = await fakeBackend({
      'GET /ok': (_q, _b, res) => json(res, 200, {}, serverAhead()),
      'GET /refused': (_q, _b, res) =>
        json(res, 401, { statusCode: 401, error: 'invalid_token', message: 'The token has expired.' }, { ...serverAhead(), 'www-authenticate': 'Bearer error="invalid_token", error_description="token expired"' }),
    });
    try {
      const clock = new ServerClock(dir);
      const client = new ApiClient({ baseUrl: backend.url, serverClock: clock });
      await client.request('GET', '/ok');
      expect(Math.abs((await clock.offsetMs(backend.url)) - TEN_MINUTES)).toBeLessThan(1_500);

      const behind = new ServerClock(join(dir, 'behind'), () => Date.now() + 2 * TEN_MINUTES);
      const refusal = await new ApiClient({ baseUrl: backend.url, serverClock: behind }).request('GET', '/refused').catch((err: unknown) => err);
      expect(refusal).toBeInstanceOf(ApiHttpError);
      expect((refusal as ApiHttpError).tokenProblem).toBe('expired');
      expect(Math.abs((await behind.offsetMs(backend.url)) + TEN_MINUTES)).toBeLessThan(1_500);
    } finally {
      await backend.close();
    }
  });
});
