/**
 * The session's lock with the built binary (issue #32): a `prospect` killed with SIGKILL in
 * the middle of a refresh leaves its lock behind, and the next command takes it over and runs
 * instead of waiting for it and failing; and auth:whoami --verify changes the session file only
 * under the lock, so it never writes back over what another process saved meanwhile.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROUTES } from '@prospect/contract';
import { eventually } from '../../../api/test/support/eventually.js';
import { withSessionLock } from '../../src/session/session-lock.js';
import { SessionStore } from '../../src/session/session-store.js';
import { fakeBackend, json, user } from '../support/fake-backend.js';
import { type Sandbox, validSession } from '../support/run-cli.js';
import { authorizedPoll } from '../support/real-api.js';
import { familyEvents } from '../support/api-fixtures.js';
import { api, box, person, useRealApi } from '../support/e2e-suite.js';

useRealApi('lock');

/** Hop-by-hop and encoding headers, which the proxy does not pass on as they were. */
const NOT_FORWARDED = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding']);

/**
 * A slow backend in front of the real API: it passes every request on, but the first refresh's
 * answer, once the API has rotated the token, never comes back, so the CLI sits in the middle
 * of its refresh, holding the lock.
 */
async function proxyThatHoldsTheFirstRefresh(target: string) {
  const state = { refreshHeld: false };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const headers = Object.entries(req.headers).filter((entry): entry is [string, string] => typeof entry[1] === 'string' && !NOT_FORWARDED.has(entry[0]));
      const upstream = await fetch(target + req.url, { method: req.method, headers, body: chunks.length ? Buffer.concat(chunks) : undefined });
      const body = Buffer.from(await upstream.arrayBuffer());
      if (req.url === ROUTES.refresh && !state.refreshHeld) {
        state.refreshHeld = true;
        return;
      }
      const answer: Record<string, string> = {};
      upstream.headers.forEach((value, name) => {
        if (!NOT_FORWARDED.has(name)) answer[name] = value;
      });
      res.writeHead(upstream.status, answer).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

it('kill -9 in the middle of a refresh: the lock is left, and the next command takes it over and runs', async () => {
  const proxy = await proxyThatHoldsTheFirstRefresh(api.baseUrl);
  try {
    const { body } = await authorizedPoll(api, person);
    const old = {
      accessToken: body.accessToken as string,
      refreshToken: body.refreshToken as string,
      apiBaseUrl: proxy.url,
      user: body.user,
      expiresAt: new Date(Date.now() - 1000).toISOString(),
      createdAt: new Date(Date.now() - 3_600_000).toISOString(),
    };
    await box.writeSession(old);
    const lock = `${box.sessionPath}.lock`;

    let victim: ChildProcess | undefined;
    const killed = box.run(['api', ROUTES.me], { onStarted: (child) => (victim = child) });
    expect(await eventually(() => proxy.state.refreshHeld && existsSync(lock), 20_000)).toBe(true);
    victim!.kill('SIGKILL');
    expect((await killed).signal).toBe('SIGKILL');
    // What the killed process left: its lock, with its name in it, and the old pair.
    expect(await readdir(lock)).toEqual([expect.stringMatching(new RegExp(`^owner\\.${victim!.pid}\\.`))]);
    expect((await box.readSession()).refreshToken).toBe(old.refreshToken);

    const next = await box.run(['api', ROUTES.me]);
    expect(next.stderr).not.toContain('Another prospect process is changing the session');
    expect({ code: next.code, stderr: next.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(next.stdout).user.email).toBe(person.email);
    expect(existsSync(lock)).toBe(false);
    // The old refresh token, presented again, got the successor the server rotated to for the killed process: no reuse.
    const renewed = await box.readSession();
    expect(renewed.refreshToken).not.toBe(old.refreshToken);
    const events = await familyEvents(api, old.accessToken);
    expect(events.filter((type) => type === 'token.reuse' || type === 'token.revoke_family')).toEqual([]);
  } finally {
    await proxy.close();
  }
});

it('auth:whoami --verify writes the session only under the lock, never over what another process saved meanwhile', async () => {
  let answerMe: () => void = () => undefined;
  const backend = await fakeBackend({
    'GET /api/cli/auth/me': (_q, _b, res) => {
      answerMe = () => json(res, 200, { user: { ...user, name: 'Ada, verified' }, expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    },
  });
  try {
    await box.writeSession(validSession(backend.url, { accessToken: 'prs_old' }));
    const store = new SessionStore(box.configDir);
    let whoami: ReturnType<Sandbox['run']> | undefined;
    // Another process is changing the session: it holds the lock, and saves a new token while whoami waits for the server.
    await withSessionLock(store, async () => {
      whoami = box.run(['auth:whoami', '--verify']);
      expect(await eventually(() => backend.requests.some((r) => r.url === ROUTES.me), 20_000)).toBe(true);
      await store.write(validSession(backend.url, { accessToken: 'prs_saved_meanwhile' }));
      answerMe();
    });
    const run = await whoami!;
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toContain('(verified)');
    expect(await box.readSession()).toMatchObject({ accessToken: 'prs_saved_meanwhile', user });
  } finally {
    await backend.close();
  }
});
