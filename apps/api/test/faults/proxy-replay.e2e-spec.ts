import { randomBytes } from 'node:crypto';
import { ROUTES } from '@prospect/contract';
import { type ApiProcess, startApiProcess } from '../support/api-process.js';
import { countTokensLabelled, seedToken } from '../support/direct-sql.js';
import { HaProxy } from '../support/haproxy.js';
import { emptyServerDatabase } from '../support/server-database.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { freePort } from '../support/throwaway-postgres.js';

/** One request through the proxy: its status, or the error a client saw instead (a reset, a hang-up). */
async function send(url: string, method: 'GET' | 'POST', token: string, json?: unknown): Promise<{ status: number } | { error: string }> {
  try {
    const res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: json === undefined ? undefined : JSON.stringify(json),
      signal: AbortSignal.timeout(15_000),
    });
    await res.arrayBuffer();
    return { status: res.status };
  } catch (err) {
    return { error: String((err as Error).cause ?? err) };
  }
}

/**
 * Two replicas behind Debian's haproxy running the shipped config (deploy/haproxy/haproxy.cfg);
 * in front of the first, a TCP proxy that plays a replica dying after its commit and before its
 * answer (it forwards the request, then resets the connection when the answer comes). haproxy
 * must not replay a write on the other replica (a second token, live for 30 days and shown to
 * nobody), and should retry a read.
 */
describe('a replica that dies after its commit, behind the shipped haproxy config', () => {
  let database: { url: string; drop(): Promise<void> };
  let dying: TcpProxy;
  let proxy: HaProxy;
  const replicas: ApiProcess[] = [];
  let token: string;

  beforeAll(async () => {
    database = await emptyServerDatabase();
    const ports = [await freePort(), await freePort()];
    dying = new TcpProxy('127.0.0.1', ports[0]!);
    await dying.start();
    proxy = await HaProxy.start([`127.0.0.1:${dying.port}`, `127.0.0.1:${ports[1]}`]);
    const env = { DATABASE_URL: database.url, PUBLIC_URL: proxy.url, LOG_LEVEL: 'warn' };
    // The first one alone on the empty database, so the migrations are done when the second starts.
    replicas.push(await startApiProcess({ ...env, PORT: String(ports[0]) }));
    replicas.push(await startApiProcess({ ...env, PORT: String(ports[1]) }));
    await proxy.waitUntilUp('api1');
    await proxy.waitUntilUp('api2');
    token = await seedToken(database.url, 'Replay');
  });
  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.stop()));
    await proxy?.stop();
    await dying?.cut();
    await database?.drop();
  });

  const tokensLabelled = (label: string) => countTokensLabelled(database.url, label);

  it('POST /api/cli/auth/token: the client gets an error, not a replay on the other replica, and exactly one token exists', async () => {
    const answered: Array<{ status: number } | { error: string }> = [];
    // Round robin may hand the request to the other replica, which answers it: then ask again.
    for (let attempt = 0; attempt < 4 && !answered.some((a) => 'error' in a || a.status !== 201); attempt++) {
      const label = `replay-${attempt}-${randomBytes(4).toString('hex')}`;
      const dropped = dying.dropAnswerTo(`POST ${ROUTES.issueToken} `);
      const answer = await send(`${proxy.url}${ROUTES.issueToken}`, 'POST', token, { label });
      answered.push(answer);
      if (dying.armed) {
        dying.disarm();
        expect(answer).toEqual({ status: 201 }); // the healthy replica had it
        expect(await tokensLabelled(label)).toBe(1);
        continue;
      }
      await dropped;
      // haproxy's 502 (the server hung up), or a client connection it closed: an error either way, and one token.
      expect({ outcome: 'error' in answer ? 'error' : String(answer.status), tokens: await tokensLabelled(label) }).toEqual({
        outcome: expect.stringMatching(/^(error|502|503)$/),
        tokens: 1,
      });
    }
    // The dying replica did get one.
    expect(answered.filter((a) => 'error' in a || a.status !== 201)).toHaveLength(1);
  });

  it('GET /api/cli/auth/me: retried on the other replica and answered', async () => {
    const dropped = dying.dropAnswerTo(`GET ${ROUTES.me} `);
    const answered: Array<{ status: number } | { error: string }> = [];
    for (let attempt = 0; attempt < 4 && dying.armed; attempt++) answered.push(await send(`${proxy.url}${ROUTES.me}`, 'GET', token));
    const matched = !dying.armed;
    dying.disarm();
    expect(matched).toBe(true); // the dying replica had it (and reset it, before haproxy could answer)
    await dropped;
    expect(answered).toEqual(answered.map(() => ({ status: 200 })));
  });
});
