import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

/**
 * A backend variant the CLI must cope with, as a real HTTP server on loopback:
 * routes map "METHOD /path" to handlers; every request is recorded.
 */
export async function fakeBackend(routes: Record<string, Handler>) {
  const requests: Array<{ method: string; url: string; body: string; authorization?: string; userAgent?: string; headers: http.IncomingHttpHeaders; remotePort?: number }> = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, body, authorization: req.headers.authorization, userAgent: req.headers['user-agent'], headers: req.headers, remotePort: req.socket.remotePort });
      const handler = routes[`${req.method} ${req.url}`];
      if (!handler) return json(res, 404, { statusCode: 404, error: 'not_found', message: 'Not found.' });
      handler(req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

export function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

export const user = { id: 'u-1', email: 'ada@example.com', name: 'Ada Lovelace' };
export const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

/** A device-login start as a backend answers it, pointing its link at `url`; `extra` overrides fields. */
export const deviceStart = (url: string, extra: object = {}) => ({
  deviceCode: 'prsd_device',
  userCode: 'BCDF-GHJK',
  verificationUrl: `${url}/device?user_code=BCDF-GHJK`,
  intervalSeconds: 1,
  expiresInSeconds: 600,
  ...extra,
});
