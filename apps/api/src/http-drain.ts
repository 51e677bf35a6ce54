import type { Server, ServerResponse } from 'node:http';
import net from 'node:net';

/** After SIGTERM, how long a connection may sit idle before it is closed (a client sending right then would see a reset). */
const IDLE_DRAIN_MS = 300;

/**
 * HTTP limits and a shutdown that drops no request.
 *
 * - A request's headers must arrive within 10 s and the whole request within
 *   HTTP_REQUEST_TIMEOUT_SECONDS; a slower client gets Node's 408 and its
 *   connection closed. Node checks every second (its default is every 30 s).
 * - `drain()`: stop accepting connections, answer every in-flight and every further
 *   request on an open connection with `Connection: close`, close connections left
 *   idle after a moment, and wait for the rest up to the grace period; then close
 *   what is left. Node's own `server.close()` would close idle keep-alive connections
 *   at once, resetting a client whose next request is already on its way.
 */
export class HttpDrain {
  private static readonly byServer = new WeakMap<Server, HttpDrain>();

  /** The drain set up on this server by createApp. */
  static of(server: Server): HttpDrain {
    const drain = HttpDrain.byServer.get(server);
    if (!drain) throw new Error('no HttpDrain on this server');
    return drain;
  }

  private draining = false;
  private readonly inFlight = new Set<ServerResponse>();

  constructor(
    private readonly server: Server,
    requestTimeoutSeconds: number,
  ) {
    server.requestTimeout = requestTimeoutSeconds * 1000;
    server.headersTimeout = Math.min(10_000, server.requestTimeout);
    // An idle keep-alive connection outlives the proxy's own idle pool (haproxy drops its idle
    // server connections after 5 s, pool-purge-delay): were Node to close first (its default is
    // also 5 s), the proxy could send a request down a connection the server is closing, and a
    // write it must not replay would come back 502 (issue #32).
    server.keepAliveTimeout = 65_000;
    // An option of http.createServer, which Nest calls for us; read when the server starts listening.
    (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = 1_000;
    HttpDrain.byServer.set(server, this);
    // Before the application's own listener, so the header is there before any answer.
    server.prependListener('request', (_req, res: ServerResponse) => {
      if (this.draining) res.setHeader('Connection', 'close');
      this.inFlight.add(res);
      res.once('close', () => this.inFlight.delete(res));
    });
  }

  /** Resolves when every connection is closed: by its client, after its answer, or at the end of the grace period. */
  async drain(graceMs: number): Promise<{ cut: number }> {
    this.draining = true;
    for (const res of this.inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
    const closed = new Promise<void>((resolve) => this.server.once('close', () => resolve()));
    // Stop listening only; net.Server's close leaves the open connections to us.
    net.Server.prototype.close.call(this.server);
    const idle = setTimeout(() => this.server.closeIdleConnections(), IDLE_DRAIN_MS);
    let cut = 0;
    const grace = setTimeout(() => {
      cut = this.inFlight.size;
      this.server.closeAllConnections();
    }, graceMs);
    await closed;
    clearTimeout(idle);
    clearTimeout(grace);
    return { cut };
  }
}
