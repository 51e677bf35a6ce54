import { createServer, type Server } from 'node:http';
import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Metrics } from './metrics.js';

/**
 * Prometheus text on `GET /metrics` of METRICS_PORT, a port of its own: the public port never
 * shows it, and a scrape costs the API's routes nothing. It listens on METRICS_HOST (loopback
 * unless asked), not on HOST: the public address does not make the metrics public. A plain
 * node:http server, since it has one route and no middleware to run.
 */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(MetricsServer.name);
  private server?: Server;

  constructor(
    private readonly metrics: Metrics,
    private readonly options: { port?: number; host: string },
  ) {}

  /** The port it listens on (METRICS_PORT=0 picks a free one); undefined when off. */
  get port(): number | undefined {
    const address = this.server?.address();
    return typeof address === 'object' && address ? address.port : undefined;
  }

  /** The address it listens on ('127.0.0.1', '0.0.0.0', '::'); undefined when off. */
  get address(): string | undefined {
    const address = this.server?.address();
    return typeof address === 'object' && address ? address.address : undefined;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.options.port === undefined) return;
    const server = createServer((req, res) => {
      if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
        res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found: the metrics are at GET /metrics\n');
        return;
      }
      this.metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': this.metrics.registry.contentType }).end(text),
        (err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${err.message}\n`),
      );
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.options.port, this.options.host, resolve));
    this.server = server;
    this.logger.log(`metrics on http://${this.options.host}:${this.port}/metrics`);
  }

  /** Closes the port with the rest of the shutdown: a scraper's open (keep-alive) connection does not hold it. */
  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeAllConnections();
    await closed;
  }
}
