import pg from 'pg';

const HEARTBEAT_MS = 5_000;
const HEARTBEAT_TIMEOUT_MS = 2_000;
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 10_000;

export interface NotificationListenerOptions {
  url: string;
  /** A constant of the code (it is written into the LISTEN statement). */
  channel: string;
  applicationName: string;
  onNotice(payload: string): void;
  /** Listening now: notices sent before this were not received. */
  onUp(): void;
  /** Not listening any more (it reconnects by itself, with backoff); `firstSince` is false for a retry that failed again. */
  onDown(err: unknown, firstSince: boolean): void;
}

/**
 * A dedicated connection that LISTENs on one channel and stays up: a heartbeat notices a
 * connection that died silently, and a lost one is replaced with growing backoff. Knows
 * nothing of what the notices mean (auth/revocation-listener.ts does).
 */
export class NotificationListener {
  private client?: pg.Client;
  private heartbeat?: NodeJS.Timeout;
  private reconnect?: NodeJS.Timeout;
  private backoffMs = FIRST_BACKOFF_MS;
  private stopping = false;
  /** Whether onDown was told since the last time it was up, so a retry loop is told as a retry. */
  private downSaid = false;

  constructor(private readonly options: NotificationListenerOptions) {}

  start(): void {
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.reconnect);
    clearInterval(this.heartbeat);
    await this.client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const { url, channel, applicationName } = this.options;
    const client = new pg.Client({ connectionString: url, application_name: applicationName, keepAlive: true });
    this.client = client;
    client.on('notification', (msg) => this.options.onNotice(msg.payload ?? ''));
    client.on('error', (err) => this.down(client, err));
    client.on('end', () => this.down(client, new Error('Connection terminated by the server')));
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch (err) {
      this.down(client, err);
      return;
    }
    if (this.stopping || this.client !== client) return;
    this.backoffMs = FIRST_BACKOFF_MS;
    this.downSaid = false;
    this.options.onUp();
    this.heartbeat = setInterval(() => void this.beat(client), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private async beat(client: pg.Client): Promise<void> {
    try {
      // pg's own client-side timeout: a connection that stopped answering fails the beat.
      await client.query({ text: 'SELECT 1', query_timeout: HEARTBEAT_TIMEOUT_MS } as pg.QueryConfig);
    } catch (err) {
      this.down(client, err);
    }
  }

  private down(client: pg.Client, err: unknown): void {
    if (this.client !== client) return; // an old connection's late event
    clearInterval(this.heartbeat);
    this.client = undefined;
    client.removeAllListeners('end');
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
    if (this.stopping) return;
    this.options.onDown(err, !this.downSaid);
    this.downSaid = true;
    this.reconnect = setTimeout(() => void this.connect(), this.backoffMs);
    this.reconnect.unref();
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
  }
}
