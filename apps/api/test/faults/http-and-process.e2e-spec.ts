import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROUTES } from '@prospect/contract';
import autocannon from 'autocannon';
import { runApiProcess, startApiProcess } from '../support/api-process.js';
import { approveInBrowser, poll, startDeviceLogin } from '../support/fixtures.js';
import { copyMigratedDataDir } from '../support/migrated-data-dir.js';

/**
 * Sends a request's headers and the first bytes of its body, then nothing: a slow client. With
 * `expectContinue`, it asks for `100 Continue` first, and `headersRead` says when the server has
 * read its headers (the request is in flight).
 */
function slowBody(baseUrl: string, { expectContinue = false } = {}) {
  const { hostname, port } = new URL(baseUrl);
  const socket = net.connect(Number(port), hostname);
  const started = Date.now();
  const expect = expectContinue ? 'Expect: 100-continue\r\n' : '';
  socket.write(`POST ${ROUTES.deviceStart} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n${expect}\r\n{"cli`);
  let text = '';
  let onHeadersRead = () => {};
  const headersRead = new Promise<void>((resolve) => (onHeadersRead = resolve));
  socket.on('data', (d: Buffer) => {
    text += d.toString();
    if (text.includes(' 100 Continue\r\n')) onHeadersRead();
  });
  socket.on('error', () => undefined);
  const answer = new Promise<{ text: string; closedAfterMs: number }>((resolve) => socket.on('close', () => resolve({ text, closedAfterMs: Date.now() - started })));
  return { socket, answer, headersRead };
}

/**
 * Slow clients, shutdown under load, and the embedded data directory's owner: each against `npm start`'s
 * process, on a copy of an embedded database already migrated (none of these is about the first start).
 */
describe('the API process under faults', () => {
  let dataDir: string;
  let data: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'prospect-faults-'));
    data = await copyMigratedDataDir(join(dataDir, 'data'));
  });
  afterEach(() => rm(dataDir, { recursive: true, force: true }));

  it('answers a request whose body stops coming with 408 and closes its connection', async () => {
    const api = await startApiProcess({ PROSPECT_DATA_DIR: data, HTTP_REQUEST_TIMEOUT_SECONDS: '2' });
    try {
      const { answer } = slowBody(api.baseUrl);
      const { text, closedAfterMs } = await answer;
      expect(text).toMatch(/^HTTP\/1\.1 408/);
      expect(closedAfterMs).toBeLessThan(3_500);
    } finally {
      await api.stop();
    }
  });

  it('on SIGTERM under load resets no connection, finishes what it accepted, and exits 0', async () => {
    const api = await startApiProcess({ PROSPECT_DATA_DIR: data });
    const codes: Record<string, number> = {};
    let exit: Promise<number | null> | undefined;
    const result = await new Promise<autocannon.Result>((resolve, reject) => {
      const load = autocannon({ url: api.baseUrl + ROUTES.deviceStart, method: 'POST', connections: 16, duration: 3 }, (err, res) =>
        err ? reject(err) : resolve(res),
      );
      load.on('reqError', (err: NodeJS.ErrnoException) => (codes[err.code ?? err.message] = (codes[err.code ?? err.message] ?? 0) + 1));
      // The signal once the load is well under way (answers coming back), not after a fixed time.
      let answered = 0;
      load.on('response', () => {
        if (++answered === 50) exit = api.stop('SIGTERM');
      });
    });
    expect(result.non2xx).toBe(0);
    expect(result['2xx']).toBeGreaterThan(0);
    // After the listener closes, new connections are refused; nothing that was sent on an open one is dropped.
    expect(Object.keys(codes).filter((code) => code !== 'ECONNREFUSED')).toEqual([]);
    expect(await exit).toBe(0);
  });

  it('on SIGTERM with a slow client still sending, exits 0 within the grace period', async () => {
    const api = await startApiProcess({ PROSPECT_DATA_DIR: data, SHUTDOWN_GRACE_SECONDS: '2' });
    const { answer, headersRead } = slowBody(api.baseUrl, { expectContinue: true });
    await headersRead;
    const started = Date.now();
    expect(await api.stop('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeLessThan(4_000);
    await answer;
    expect(api.stdout()).toContain('still open after 2 s');
  });

  it('keeps an approval across kill -9, and a poll retried after a lost answer gets the same token', async () => {
    const first = await startApiProcess({ PROSPECT_DATA_DIR: data });
    const start = await startDeviceLogin(first.baseUrl);
    const email = await approveInBrowser(first.baseUrl, start.userCode);
    await first.stop('SIGKILL');
    const second = await startApiProcess({ PROSPECT_DATA_DIR: data });
    try {
      const authorized = await poll(second.baseUrl, start.deviceCode);
      expect(authorized.body).toMatchObject({ status: 'authorized', user: { email } });
      // The answer never reached the CLI (it crashed, or the connection dropped): it asks again.
      expect((await poll(second.baseUrl, start.deviceCode)).body).toEqual(authorized.body);
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });

  it('refuses a second process on the same embedded data directory, naming it and the holder', async () => {
    const first = await startApiProcess({ PROSPECT_DATA_DIR: data });
    try {
      const second = await runApiProcess({ PROSPECT_DATA_DIR: data, PORT: '0' });
      expect(second.code).toBe(1);
      expect(second.stderr).toBe(
        `prospect-api failed to start: ${data} is in use by another Prospect API (pid ${first.child.pid}); stop it first, or set PROSPECT_DATA_DIR to another directory\n`,
      );
    } finally {
      expect(await first.stop()).toBe(0);
    }
  });

  it('takes over the lock a killed process left behind', async () => {
    const killed = await startApiProcess({ PROSPECT_DATA_DIR: data });
    const lock = await readFile(join(data, 'prospect-api.lock'), 'utf8');
    expect(lock.trim()).toBe(String(killed.child.pid));
    await killed.stop('SIGKILL');
    const next = await startApiProcess({ PROSPECT_DATA_DIR: data });
    expect((await readFile(join(data, 'prospect-api.lock'), 'utf8')).trim()).toBe(String(next.child.pid));
    expect(await next.stop()).toBe(0);
    // A clean stop leaves no lock; a lock naming a pid that is not running is taken over too.
    await writeFile(join(data, 'prospect-api.lock'), '2147483646\n');
    const again = await startApiProcess({ PROSPECT_DATA_DIR: data });
    expect(await again.stop()).toBe(0);
  });
});
