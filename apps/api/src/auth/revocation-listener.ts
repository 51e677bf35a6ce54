import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import pg from 'pg';
import { DatabaseAvailability, isDatabaseUnavailable } from '../database/database-availability.js';
import { DatabaseInfo } from '../database/database-info.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

export const TOKEN_EVENTS_CHANNEL = 'prospect_token_events';
const HEARTBEAT_MS = 5_000;
const HEARTBEAT_TIMEOUT_MS = 2_000;
const MAX_BACKOFF_MS = 10_000;

/**
 * Keeps the verified-token cache honest across API instances: a dedicated
 * connection LISTENs for the notices the database triggers send on every
 * revocation. While that connection is not known to be up, the cache is
 * flushed and bypassed; a heartbeat notices a silently dead connection.
 * A database that went away is reported to DatabaseAvailability, which says so once
 * however often the listener tries to reconnect meanwhile.
 *
 * On the embedded database (one process by construction; PGlite delivers no
 * notifications over its socket) there is no listener and no cache.
 */
@Injectable()
export class RevocationListener implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RevocationListener.name);
  private client?: pg.Client;
  private heartbeat?: NodeJS.Timeout;
  private reconnect?: NodeJS.Timeout;
  private backoffMs = 250;
  private stopping = false;
  /** Whether the failure that ended the last connection was said, so a retry loop says it once. */
  private failureLogged = false;

  constructor(
    private readonly cache: VerifiedTokenCache,
    private readonly database: DatabaseInfo,
    private readonly availability: DatabaseAvailability,
  ) {}

  onModuleInit(): void {
    if (!this.database.embedded) void this.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.reconnect);
    clearInterval(this.heartbeat);
    this.cache.enabled = false;
    await this.client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.database.url, application_name: 'prospect-revocation-listener', keepAlive: true });
    this.client = client;
    client.on('notification', (msg) => this.onNotice(msg.payload ?? ''));
    client.on('error', (err) => this.down(client, err));
    client.on('end', () => this.down(client, new Error('Connection terminated by the server')));
    try {
      await client.connect();
      await client.query(`LISTEN ${TOKEN_EVENTS_CHANNEL}`);
    } catch (err) {
      this.down(client, err);
      return;
    }
    if (this.stopping || this.client !== client) return;
    // Notices sent while we were not listening are lost: start from an empty cache.
    this.cache.enabled = true;
    this.backoffMs = 250;
    this.failureLogged = false;
    this.heartbeat = setInterval(() => void this.beat(client), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private onNotice(payload: string): void {
    const id = payload.slice(2);
    if (payload.startsWith('t:')) this.cache.evictToken(id);
    else if (payload.startsWith('u:')) this.cache.evictUser(id);
    else this.cache.clear();
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
    this.cache.enabled = false;
    clearInterval(this.heartbeat);
    this.client = undefined;
    client.removeAllListeners('end');
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
    if (this.stopping) return;
    if (isDatabaseUnavailable(err)) {
      this.availability.report(err);
    } else if (!this.failureLogged) {
      this.failureLogged = true;
      this.logger.warn(`token revocation listener down (${(err as Error).message}); verifying every token against the database until it is back`);
    }
    this.reconnect = setTimeout(() => void this.connect(), this.backoffMs);
    this.reconnect.unref();
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
  }
}
