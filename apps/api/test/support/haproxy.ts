import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.js';
import { cleanUpOnExit } from './process-cleanup.js';
import { freePort } from './throwaway-postgres.js';

/** The load balancer config the repository ships (docker-compose.yml uses it too). */
export const HAPROXY_CFG = fileURLToPath(new URL('../../../../deploy/haproxy/haproxy.cfg', import.meta.url));
/** The body of its own 503 (no replica ready), beside it: the API's one error body. */
export const HAPROXY_503_BODY = fileURLToPath(new URL('../../../../deploy/haproxy/503.json', import.meta.url));

/** Debian's haproxy (installed by .ci/run) running the shipped config in front of the given replicas. */
export class HaProxy {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    private readonly statsUrl: string,
    private readonly output: () => string,
  ) {}

  /**
   * @param replicas host:port of each replica: PROSPECT_API1, PROSPECT_API2, PROSPECT_API3 of the config.
   * @param settings more of the config's variables (PROSPECT_PROXY_TLS_CERT, PROSPECT_PROXY_TLS_BIND).
   */
  static async start(replicas: string[], settings: Record<string, string> = {}): Promise<HaProxy> {
    const [port, statsPort] = [await freePort(), await freePort()];
    const env: Record<string, string> = { PROSPECT_PROXY_BIND: `127.0.0.1:${port}`, PROSPECT_PROXY_STATS_BIND: `127.0.0.1:${statsPort}`, ...settings };
    replicas.forEach((address, i) => (env[`PROSPECT_API${i + 1}`] = address));
    const child = spawn('haproxy', ['-db', '-f', HAPROXY_CFG], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    // Ends with the test process however it ends (Ctrl-C included), unless stopped first.
    const forget = cleanUpOnExit({ kill: child.pid! });
    child.once('exit', forget);
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const proxy = new HaProxy(child, `http://127.0.0.1:${port}`, `http://127.0.0.1:${statsPort}/stats;csv`, () => output);
    if (!(await eventually(async () => (await proxy.serverStates().catch(() => undefined)) !== undefined, 10_000))) {
      throw new Error(`haproxy did not start: ${output}`);
    }
    return proxy;
  }

  /** Each server of the `api` backend and its state as haproxy sees it ("UP", "DOWN", "UP 1/2"…), from its CSV stats. */
  async serverStates(): Promise<Record<string, string>> {
    const csv = await (await fetch(this.statsUrl)).text();
    const [header, ...rows] = csv.trim().split('\n');
    const columns = header!.replace(/^# /, '').split(',');
    const [proxyName, serverName, status] = ['pxname', 'svname', 'status'].map((name) => columns.indexOf(name));
    const states: Record<string, string> = {};
    for (const row of rows) {
      const cells = row.split(',');
      if (cells[proxyName!] === 'api' && cells[serverName!] !== 'BACKEND') states[cells[serverName!]!] = cells[status!]!;
    }
    return states;
  }

  /** Waits (bounded) until haproxy sends requests to `server` again, after its health checks rose. */
  async waitUntilUp(server: string, timeoutMs = 15_000): Promise<void> {
    if (!(await eventually(async () => (await this.serverStates())[server] === 'UP', timeoutMs))) {
      throw new Error(`haproxy never saw ${server} up: ${JSON.stringify(await this.serverStates())}\n${this.output()}`);
    }
  }

  /** Its log: one line per request, with the server that answered and the termination state. */
  log(): string {
    return this.output();
  }

  /**
   * The log line of the request with this X-Request-Id (the config logs it as `reqId="…"`), once
   * haproxy has written it (at the end of the request); undefined if it never does.
   */
  async logLineOf(requestId: string, timeoutMs = 5_000): Promise<string | undefined> {
    const find = () => this.output().split('\n').find((line) => line.endsWith(` reqId="${requestId}"`));
    await eventually(() => find() !== undefined, timeoutMs);
    return find();
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}
