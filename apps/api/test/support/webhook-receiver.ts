import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** What the receiver does with the next request. */
export type ReceiverMode = 'down' | 'hang' | 500 | 200 | { redirectTo: string };

export interface ReceivedDelivery {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  payload: { id: string; type: string; [field: string]: unknown };
}

/**
 * A real webhook endpoint on a loopback port that verifies every delivery with the
 * `standardwebhooks` package (the Standard Webhooks reference implementation) against each secret
 * it was given, and keeps the verified ones. `down` resets the connection (an endpoint that is not
 * there), `hang` never answers, 500 answers a server error, 200 accepts.
 */
export async function startWebhookReceiver() {
  let mode: ReceiverMode = 200;
  let secrets: string[] = [];
  const accepted: ReceivedDelivery[] = [];
  /** Every request, whatever it was answered. */
  const requests: Array<{ headers: IncomingMessage['headers']; body: string }> = [];
  /** Deliveries whose signature did not verify with every secret given. */
  const unverified: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ headers: req.headers, body });
      if (mode === 'down') return void req.socket.destroy();
      if (mode === 'hang') return; // never answers (close() ends the connection)
      if (typeof mode === 'object') return void res.writeHead(302, { location: mode.redirectTo }).end();
      const headers = { 'webhook-id': String(req.headers['webhook-id']), 'webhook-timestamp': String(req.headers['webhook-timestamp']), 'webhook-signature': String(req.headers['webhook-signature']) };
      let payload: ReceivedDelivery['payload'] | undefined;
      for (const secret of secrets) {
        try {
          payload = new Webhook(secret).verify(body, headers) as ReceivedDelivery['payload'];
        } catch {
          unverified.push(`${headers['webhook-id']} with ${secret.slice(0, 10)}…`);
        }
      }
      if (mode === 500 || !payload) return void res.writeHead(mode === 500 ? 500 : 400).end();
      accepted.push({ id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'], body, payload });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/hooks`,
    accepted,
    requests,
    unverified,
    /** The secrets every delivery must verify with. */
    verifyWith(...next: string[]) {
      secrets = next;
    },
    set mode(next: ReceiverMode) {
      mode = next;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
