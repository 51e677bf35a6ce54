import { ApiClient, MAX_ANSWER_BYTES } from '../src/api-client/api-client.js';
import { stripControls } from '../src/api-client/untrusted-text.js';
import { DeviceLoginClient } from '../src/device-login/device-login-client.js';
import { CliError } from '../src/errors.js';
import { fakeBackend, inAnHour, json } from './support/fake-backend.js';

const ESC = '\u001b';
const BEL = '\u0007';

describe('a hostile server', () => {
  it.each([
    [`${ESC}]0;pwned${BEL}Ada`, 'Ada'],
    [`${ESC}[2K${ESC}[1AAda`, 'Ada'],
    [`${ESC}[31mAda${ESC}[0m`, 'Ada'],
    [`Ada\u009b31m`, 'Ada'],
    [`A\rd\ba\u0000`, 'Ada'],
    ['Ada Lovelace', 'Ada Lovelace'],
  ])('cannot reach the terminal through a string: %j → %j', (input, shown) => {
    expect(stripControls(input)).toBe(shown);
  });

  it.each([
    // U+202E prints what follows reversed: "evil.test/\u202emoc.elpmaxe.di" would read as "evil.test/id.example.com".
    ['a right-to-left override', 'evil.test/\u202emoc.elpmaxe.di', 'evil.test/moc.elpmaxe.di'],
    ['every embedding and override', '\u202aA\u202bd\u202ca\u202d \u202eL', 'Ada L'],
    ['every isolate', '\u2066A\u2067d\u2068a\u2069', 'Ada'],
    ['the direction marks LRM, RLM and ALM', 'A\u200ed\u200fa\u061c', 'Ada'],
  ])('cannot reorder what the terminal shows with bidi controls: %s', (_, input, shown) => {
    expect(stripControls(input)).toBe(shown);
  });

  it('has every string of its answers stripped, error messages included', async () => {
    const backend = await fakeBackend({
      'GET /api/cli/auth/me': (_req, _b, res) =>
        json(res, 200, { user: { id: 'u1', email: `ada@example.com${ESC}[8m`, name: `${ESC}]0;owned${BEL}Ada` }, expiresAt: inAnHour() }),
      'POST /api/cli/auth/logout': (_req, _b, res) => json(res, 403, { statusCode: 403, error: 'forbidden', message: `No${ESC}[2K${ESC}[1A you may not` }),
    });
    try {
      const api = new ApiClient({ baseUrl: backend.url });
      expect((await api.me('prs_x')).user).toEqual({ id: 'u1', email: 'ada@example.com', name: 'Ada' });
      await expect(api.request('POST', '/api/cli/auth/logout')).rejects.toThrow('No you may not');
    } finally {
      await backend.close();
    }
  });

  it('cannot make the CLI read a huge answer', async () => {
    const backend = await fakeBackend({
      'GET /api/cli/auth/me': (_req, _b, res) => {
        // No Content-Length: the CLI must stop reading by itself.
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = 'x'.repeat(64 * 1024);
        let sent = 0;
        const pump = () => {
          while (sent < 4 * MAX_ANSWER_BYTES) {
            sent += chunk.length;
            if (!res.write(chunk)) return res.once('drain', pump);
          }
          res.end();
        };
        pump();
      },
      'GET /api/cli/auth/big': (_req, _b, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(2 * MAX_ANSWER_BYTES) });
        res.end();
      },
    });
    try {
      const api = new ApiClient({ baseUrl: backend.url });
      const refusal = new CliError(`The server's answer is larger than 1 MiB; refusing to read it.`);
      await expect(api.me('prs_x')).rejects.toThrow(refusal.message);
      await expect(api.request('GET', '/api/cli/auth/big')).rejects.toThrow(refusal.message);
    } finally {
      await backend.close();
    }
  });

  it.each([
    ['a user code of three groups', { userCode: 'ABCD-EFGH-JKLM' }, /not of the form XXXX-XXXX/],
    ['a user code with spaces', { userCode: 'ABCD EFGH' }, /not of the form XXXX-XXXX/],
    ['a javascript: address', { verificationUrl: 'javascript:alert(1)' }, /not an http\(s\) address/],
  ])('is refused when it sends %s', async (_, change, error) => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_req, _b, res) =>
        json(res, 200, { deviceCode: 'prsd_x', userCode: 'BCDF-GHJK', verificationUrl: 'http://id.example.com/device', intervalSeconds: 5, expiresInSeconds: 600, ...change }),
    });
    try {
      const client = new DeviceLoginClient(new ApiClient({ baseUrl: backend.url }));
      await expect(client.start({ clientName: 'prospect', hostname: 'h' })).rejects.toThrow(error);
    } finally {
      await backend.close();
    }
  });

  it('has its verification address shown as the browser will read it', async () => {
    const backend = await fakeBackend({
      'POST /api/cli/auth/device/start': (_req, _b, res) =>
        json(res, 200, { deviceCode: 'prsd_x', userCode: 'BCDF-GHJK', verificationUrl: 'HTTP://ID.Example.com:80/device?user_code=BCDF-GHJK', intervalSeconds: 5, expiresInSeconds: 600 }),
    });
    try {
      const start = await new DeviceLoginClient(new ApiClient({ baseUrl: backend.url })).start({ clientName: 'prospect', hostname: 'h' });
      expect(start.verificationUrl).toBe('http://id.example.com/device?user_code=BCDF-GHJK');
    } finally {
      await backend.close();
    }
  });
});
