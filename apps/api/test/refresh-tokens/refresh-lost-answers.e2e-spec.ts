import net, { type AddressInfo } from 'node:net';
import { OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { FakeClock } from '../support/fake-clock.js';
import { authorizedPoll, countAuthEvents, createUser } from '../support/fixtures.js';
import { get, post, request, type JsonResponse } from '../support/http.js';
import { emptyServerDatabase } from '../support/server-database.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { refreshTokens } from '../support/token-fixtures.js';


/**
 * A TCP proxy in front of the API that forwards one request and drops its answer: the client's
 * connection is cut when the first byte of the answer reaches the proxy, after the server
 * committed — what a killed API, a killed CLI or a dropped connection leaves behind.
 */
async function answerDroppingProxy(apiPort: number) {
  let answerDropped!: () => void;
  const dropped = new Promise<void>((resolve) => (answerDropped = resolve));
  const server = net.createServer((client) => {
    const upstream = net.connect(apiPort, '127.0.0.1');
    client.pipe(upstream);
    upstream.once('data', () => {
      client.destroy();
      upstream.destroy();
      answerDropped();
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    dropped,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('a lost refresh answer is never a reuse within REFRESH_REPLAY_SECONDS (issues #19, #43)', () => {
  const clock = new FakeClock();
  let api: TestApp;
  let database: Awaited<ReturnType<typeof emptyServerDatabase>>;
  beforeAll(async () => {
    // A Postgres server even where the suite runs on the embedded database: the tests under
    // concurrency lock a family beside others' rotations, which one backend serialises away.
    database = await emptyServerDatabase();
    api = await startTestApp({ clock, database: { ...database, kind: 'server' } });
  });
  afterAll(async () => {
    await api.close();
    await database.drop();
  });

  const refresh = (refreshToken: string) => post(api, ROUTES.refresh, { refreshToken });
  const signIn = async () => {
    const user = await createUser(api);
    const { body } = await authorizedPoll(api, user);
    const family = (await api.app.get(TokensService).describe(body.accessToken))!.grantId!;
    return { user, family, accessToken: body.accessToken as string, refreshToken: body.refreshToken as string };
  };
  const reuses = (family: string) => countAuthEvents(api, { type: 'token.reuse', detail: { deviceLoginId: family } });
  const refreshTokensOf = async (family: string) => (await refreshTokens(api, { grantId: family })).length;
  const liveRefreshTokensOf = async (family: string) => (await refreshTokens(api, { grantId: family })).filter((token) => !token.rotated_at && !token.revoked_at).length;
  /** The rotation happens, its answer never reaches the client. */
  const refreshWithAnswerLost = async (refreshToken: string) => {
    const proxy = await answerDroppingProxy(Number(new URL(api.baseUrl).port));
    try {
      const sent = fetch(proxy.url + ROUTES.refresh, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refreshToken }) });
      await expect(sent).rejects.toThrow();
      await proxy.dropped;
    } finally {
      await proxy.close();
    }
  };

  it('the old token presented 15 s after a dropped answer gets the same successor; after REFRESH_REPLAY_SECONDS it is a reuse', async () => {
    const { family, refreshToken } = await signIn();
    await refreshWithAnswerLost(refreshToken);
    expect(await refreshTokensOf(family)).toBe(2); // the server did rotate

    clock.advanceSeconds(15);
    const retried = await refresh(refreshToken);
    expect(retried.status).toBe(200);
    expect((await get(api, ROUTES.me, retried.body.accessToken)).status).toBe(200);
    clock.advanceSeconds(44);
    expect((await refresh(refreshToken)).body).toEqual(retried.body); // 59 s after the rotation: again the same
    expect(await reuses(family)).toBe(0);
    expect(await refreshTokensOf(family)).toBe(2); // answered again, never rotated again

    // 60 s after the rotation the window is over: whoever presents it now is a copy's holder.
    clock.advanceSeconds(1);
    const late = await refresh(refreshToken);
    expect(late.status).toBe(401);
    expect(late.body.message).toMatch(/already used.*revoked/);
    expect(await reuses(family)).toBe(1);
    expect((await get(api, ROUTES.me, retried.body.accessToken)).status).toBe(401);
    expect(await liveRefreshTokensOf(family)).toBe(0);
  });

  it('a copied refresh token used in step with its owner is caught once the window passes (issue #43, finding 1)', async () => {
    const { family, refreshToken } = await signIn();
    // The owner and a thief present the same token a few seconds apart, round after round: each
    // round both get the same new pair. The rounds go on every 10 minutes, as a CLI refreshes.
    let current = refreshToken;
    const owner = await refresh(current);
    clock.advanceSeconds(5);
    const thief = await refresh(current);
    expect(thief.body).toEqual(owner.body); // within the window: indistinguishable from a lost answer
    current = owner.body.refreshToken;
    clock.advanceSeconds(600);
    // The owner refreshes; the thief, holding the old one, is late by more than the window.
    expect((await refresh(current)).status).toBe(200);
    clock.advanceSeconds(61);
    const caught = await refresh(current);
    expect(caught.status).toBe(401);
    expect(await reuses(family)).toBe(1);
    expect(await liveRefreshTokensOf(family)).toBe(0);
  });

  it('the same through the OAuth token endpoint (RFC 6749 refresh grant)', async () => {
    const { family, refreshToken } = await signIn();
    const grant = (token: string) =>
      request(api, 'POST', OAUTH_ROUTES.token, {
        body: new URLSearchParams({ grant_type: 'refresh_token', client_id: 'prospect-cli', refresh_token: token }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
    const lost = await grant(refreshToken); // answered, and ignored
    expect(lost.status).toBe(200);
    clock.advanceSeconds(15);
    const again = await grant(refreshToken);
    expect(again.status).toBe(200);
    expect(again.body.refresh_token).toBe(lost.body.refresh_token);
    expect(again.body.access_token).toBe(lost.body.access_token);
    expect(again.body.expires_in).toBe(3600 - 15);
    expect(await reuses(family)).toBe(0);
  });

  it('once the successor was used, its predecessor is a reuse, and so is any older generation; the newest rotated one is still answered', async () => {
    const { family, accessToken, refreshToken: first } = await signIn();
    await refreshWithAnswerLost(first);
    clock.advanceSeconds(15);
    const second = (await refresh(first)).body; // recovered after the lost answer
    clock.advanceSeconds(30);
    const third = (await refresh(second.refreshToken)).body; // the successor is used now…
    clock.advanceSeconds(30);
    expect((await refresh(second.refreshToken)).body).toEqual(third); // …its own answer may be lost too

    // `first` is two generations behind the newest (`third`) and its successor was used: a copy.
    const reuse = await refresh(first);
    expect(reuse.status).toBe(401);
    expect(reuse.body.message).toMatch(/already used.*revoked/);
    expect(await reuses(family)).toBe(1);
    for (const token of [accessToken, second.accessToken, third.accessToken]) expect((await get(api, ROUTES.me, token)).status).toBe(401);
    for (const token of [second.refreshToken, third.refreshToken]) expect((await refresh(token)).body.message).toMatch(/revoked/);
    expect(await liveRefreshTokensOf(family)).toBe(0);
  });

  describe('under concurrency', () => {
    it('50 parallel refreshes of one token rotate it once and all answer the same pair; 50 more after the window: one reuse, all refused', async () => {
      const { family, refreshToken } = await signIn();
      const fifty = () => Promise.all(Array.from({ length: 50 }, () => refresh(refreshToken)));
      const answers = await fifty();
      expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
      for (const answer of answers) expect(answer.body).toEqual(answers[0].body);
      expect(await refreshTokensOf(family)).toBe(2);

      // Presented by 50 at once after REFRESH_REPLAY_SECONDS: the family is revoked once, and nobody gets a pair.
      clock.advanceSeconds(61);
      const late = await fifty();
      expect(late.map((a) => a.status)).toEqual(Array(50).fill(401));
      expect(await refreshTokensOf(family)).toBe(2);
      expect(await reuses(family)).toBe(1);
      expect((await get(api, ROUTES.me, answers[0].body.accessToken)).status).toBe(401);
    });

    it('a token and its successor presented in parallel leave one live refresh token, or a family revoked as reused: never two', async () => {
      for (let round = 0; round < 15; round++) {
        const { family, refreshToken: first } = await signIn();
        const second = (await refresh(first)).body;
        // Fired in order (the predecessor first, likely answered again) or shuffled (likely a reuse).
        const fired = [first, first, first, second.refreshToken, second.refreshToken, second.refreshToken];
        const presented = round % 2 ? fired.sort(() => Math.random() - 0.5) : fired;
        const answers: Array<JsonResponse & { presented: string }> = await Promise.all(
          presented.map(async (token) => ({ ...(await refresh(token)), presented: token })),
        );
        const reused = answers.some((a) => a.status === 401 && /already used/.test(a.body.message));
        if (reused) {
          expect(await reuses(family)).toBe(1);
          expect(await liveRefreshTokensOf(family)).toBe(0);
          for (const a of answers) if (a.status !== 200) expect(a.body.message).toMatch(/already used|revoked/);
        } else {
          expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
          expect(await liveRefreshTokensOf(family)).toBe(1);
          expect(await reuses(family)).toBe(0);
        }
        // However they interleaved: `second` rotated once (a reuse needs it used), one successor per
        // token, and every answer to the same token is the same pair.
        expect(await refreshTokensOf(family)).toBe(3);
        for (const token of [first, second.refreshToken]) {
          const bodies = answers.filter((a) => a.presented === token && a.status === 200).map((a) => a.body);
          for (const body of bodies) expect(body).toEqual(bodies[0]);
        }
        const fromFirst = answers.find((a) => a.presented === first && a.status === 200);
        if (fromFirst) expect(fromFirst.body.refreshToken).toBe(second.refreshToken);
      }
    });
  });
});
