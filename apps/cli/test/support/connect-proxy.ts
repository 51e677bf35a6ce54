import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A forward proxy as teams run one (squid, a corporate gateway), reduced to what carries HTTPS and
 * HTTP for a client that tunnels: CONNECT host:port, then bytes both ways. It counts what it
 * carried, per target. A request it is sent in the clear (absolute-form, no tunnel) is recorded
 * too and refused, so a client that does not tunnel shows in the counts instead of passing.
 */
export async function connectProxy() {
  const tunnels: string[] = [];
  /** The local port of each connection the proxy opened to a target: a server sees it as the request's remote port. */
  const upstreamPorts = new Set<number>();
  const plainRequests: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = http.createServer((req, res) => {
    plainRequests.push(`${req.method} ${req.url}`);
    res.writeHead(405, { connection: 'close' }).end();
  });
  server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const target = req.url ?? '';
    tunnels.push(target);
    const [host, port] = [target.slice(0, target.lastIndexOf(':')).replace(/^\[|\]$/g, ''), Number(target.slice(target.lastIndexOf(':') + 1))];
    const upstream = net.connect(port, host, () => {
      upstreamPorts.add(upstream.localPort!);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    }
    upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'));
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Each CONNECT's target (`127.0.0.1:port`), in order. */
    tunnels,
    upstreamPorts,
    plainRequests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
