import { ROUTES } from '@prospect/contract';
import { client } from '../support/http.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** X-Request-Id: a proxy's id is kept, else one is made; it is in the answer and on the request's log lines. */
describe('request ids', () => {
  let api: TestApp;
  beforeAll(async () => (api = await startTestApp()));
  afterAll(() => api?.close());

  /** The request's line, once the log stream has delivered it (it is written when the answer is finished). */
  const logLineOf = async (reqId: string) => {
    for (let i = 0; i < 50; i++) {
      const line = readLine(reqId);
      if (line) return line;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return undefined;
  };
  const readLine = (reqId: string) =>
    api
      .logs()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { reqId?: string; msg: string; req?: { url: string } })
      .find((line) => line.reqId === reqId && line.msg === 'request completed');

  it('makes one when none is sent, answers it, and logs the request line with it', async () => {
    const res = await client(api).get(ROUTES.me);
    expect(res.status).toBe(401);
    const id = res.headers['x-request-id'];
    expect(id).toMatch(UUID);
    expect(await logLineOf(id)).toMatchObject({ req: { url: ROUTES.me } });
  });

  it("keeps a well-formed id from the caller (a proxy's), on the answer and the log line", async () => {
    const res = await client(api).get(ROUTES.me).set('X-Request-Id', 'lb-7f3a:42');
    expect(res.headers['x-request-id']).toBe('lb-7f3a:42');
    expect(await logLineOf('lb-7f3a:42')).toBeDefined();
  });

  it.each([
    ['too long', 'x'.repeat(129)],
    ['spaces and quotes', 'a b "c"'],
    ['a forged JSON field', '","level":60,"msg":"x'],
  ])('replaces an id that is %s with its own', async (_what, sent) => {
    const res = await client(api).get(ROUTES.me).set('X-Request-Id', sent);
    expect(res.headers['x-request-id']).toMatch(UUID);
  });

  it('gives every request its own id, under concurrency', async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, () => client(api).get(ROUTES.me)));
    expect(new Set(answers.map((res) => res.headers['x-request-id'])).size).toBe(50);
  });
});
