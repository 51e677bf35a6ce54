import net from 'node:net';
import { Transform } from 'node:stream';

/**
 * A loopback TCP proxy a test can cut and restore, to play a database that
 * goes away and comes back without touching the real one; or, in front of an
 * HTTP server, a server that dies after doing a request's work and before
 * answering it (`dropAnswerTo`).
 */
export class TcpProxy {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private doomed?: { requestStart: string; dropped: () => void };
  port = 0;

  constructor(
    private targetHost: string,
    private targetPort: number,
  ) {}

  /**
   * New connections go to `host:port` from now on; open ones stay with the old target until it
   * closes them. What a failover does to the one address clients know (a DNS name, a virtual IP,
   * a managed service's endpoint) when it moves to the promoted standby.
   */
  retarget(host: string, port: number): void {
    this.targetHost = host;
    this.targetPort = port;
  }

  /** Proxies a postgres:// URL: returns the same URL through this proxy. */
  static async forUrl(url: string): Promise<{ proxy: TcpProxy; url: string }> {
    const target = new URL(url);
    const proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    target.hostname = '127.0.0.1';
    target.port = String(proxy.port);
    return { proxy, url: target.toString() };
  }

  /** Listens (again, after `cut`, on the same port). */
  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      let dropNextAnswer: (() => void) | undefined;
      // After the pipe's own listener: the request is on its way upstream when it is marked.
      client.pipe(upstream);
      client.on('data', (chunk: Buffer) => {
        if (this.doomed && chunk.toString('latin1').startsWith(this.doomed.requestStart)) {
          dropNextAnswer = this.doomed.dropped;
          this.doomed = undefined;
        }
      });
      const answers = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          if (!dropNextAnswer) return done(null, chunk);
          // The server answers after its work (a commit) is done: it "dies" now, and the client sees a reset.
          dropNextAnswer();
          client.resetAndDestroy();
          upstream.destroy();
          done();
        },
      });
      upstream.pipe(answers).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /**
   * The next request whose first bytes are `requestStart` (e.g. `POST /api/cli/auth/token `) is
   * forwarded, and when its answer comes the client's connection is reset instead: a server that
   * died after its work and before its answer. Resolves when that happened.
   */
  dropAnswerTo(requestStart: string): Promise<void> {
    return new Promise((resolve) => (this.doomed = { requestStart, dropped: resolve }));
  }

  /** Whether a `dropAnswerTo` is still waiting for its request. */
  get armed(): boolean {
    return this.doomed !== undefined;
  }

  /** Stops dropping: a `dropAnswerTo` whose request never came is forgotten. */
  disarm(): void {
    this.doomed = undefined;
  }

  /** Drops every connection and refuses new ones, like a stopped database. */
  async cut(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
