import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Handler } from './fake-backend.js';

/**
 * A certificate authority of the test's own, made with the openssl CLI (as a team's CA would be),
 * and server certificates it signs: a good one for 127.0.0.1, an expired one, one for another name.
 * `caPath` is what NODE_EXTRA_CA_CERTS points at.
 */
export async function makeTestCa() {
  const dir = await mkdtemp(join(tmpdir(), 'prospect-test-ca-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl('req', '-x509', ...ecKey, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Prospect Test CA');
  let serial = 1;
  /** A server certificate signed by the CA; `days: -1` makes one that expired yesterday. */
  const serverCert = async (altNames: string, days = 2) => {
    const name = `server-${++serial}`;
    openssl('req', ...ecKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', '/CN=prospect test server');
    await writeFile(join(dir, `${name}.ext`), `subjectAltName=${altNames}\n`);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-set_serial', String(serial), '-days', String(days), '-extfile', `${name}.ext`, '-out', `${name}.pem`);
    return { key: await readFile(join(dir, `${name}.key`)), cert: await readFile(join(dir, `${name}.pem`)) };
  };
  return { caPath: join(dir, 'ca.pem'), serverCert, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** An HTTPS server on loopback with `credentials`, answering `routes` as fakeBackend does ("METHOD /path"). */
export async function httpsBackend(credentials: { key: Buffer; cert: Buffer }, routes: Record<string, Handler>) {
  const requests: Array<{ method: string; url: string; remotePort?: number }> = [];
  const server = https.createServer(credentials, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, remotePort: req.socket.remotePort });
      const handler = routes[`${req.method} ${req.url}`];
      if (!handler) {
        res.writeHead(404, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ statusCode: 404, error: 'not_found', message: 'Not found.' }));
      }
      handler(req, body, res);
    });
  });
  // A refused handshake is the point of several tests; it must not be an unhandled error here.
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    requests,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
