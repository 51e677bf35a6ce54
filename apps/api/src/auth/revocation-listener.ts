import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { DatabaseAvailability, describeDatabaseError } from '../database/database-availability.js';
import { DatabaseInfo } from '../database/database-info.js';
import { NotificationListener } from '../database/notification-listener.js';
import { Metrics } from '../metrics/metrics.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

/** Where the database triggers (migration 010) announce every revocation: `t:<token id>`, `u:<user id>`, or anything else for "all". */
export const TOKEN_EVENTS_CHANNEL = 'prospect_token_events';

/**
 * Keeps the verified-token cache honest across API instances: a dedicated
 * connection LISTENs for the notices the database triggers send on every
 * revocation. While that connection is not known to be up, the cache is
 * flushed and bypassed. A lost connection is logged once as the listener's
 * own when the pool still answers; when the pool fails too, it is the
 * database's outage, which DatabaseAvailability says once however often the
 * listener tries to reconnect meanwhile.
 *
 * On the embedded database (one process by construction; PGlite delivers no
 * notifications over its socket) there is no listener and no cache.
 */
@Injectable()
export class RevocationListener implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RevocationListener.name);
  private readonly listener: NotificationListener;
  private up = false;
  /** Since when it has not been listening (the last loss). */
  private downSince?: number;
  /** The current loss was logged as the listener's own (the pool answering), so its end is logged too. */
  private lossLogged = false;
  /** The pool is being asked whether a loss is the database's. */
  private asking = false;

  constructor(
    private readonly cache: VerifiedTokenCache,
    private readonly database: DatabaseInfo,
    private readonly availability: DatabaseAvailability,
    metrics: Metrics,
  ) {
    metrics.gauge('prospect_revocation_listener_connected', 'Whether revocations reach this instance (1: listening, or the embedded database, which needs no listener).', () => Number(this.listening));
    this.listener = new NotificationListener({
      // A LISTEN is a session's: on the server itself, never through a pooler.
      url: database.directUrl,
      channel: TOKEN_EVENTS_CHANNEL,
      applicationName: 'prospect-revocation-listener',
      onNotice: (payload) => this.onNotice(payload),
      // Notices sent while we were not listening are lost: start from an empty cache.
      onUp: () => {
        this.up = true;
        cache.enabled = true;
        if (this.lossLogged) this.logger.log(`revocation listener connected again after ${this.secondsDown()} s; token cache on`);
        this.lossLogged = false;
      },
      onDown: (err) => {
        if (this.up || this.downSince === undefined) this.downSince = Date.now();
        this.up = false;
        cache.enabled = false;
        void this.sayLost(err);
      },
    });
  }

  /**
   * Once per loss, as what it is: when the pool fails too, the database is away, and
   * DatabaseAvailability says so (once, "answering 503"); when the pool answers, requests are
   * served as usual and only this connection is lost (its server address unreachable, its
   * session killed). Asked again at each failed reconnect until one of the two is said, so a
   * listener still lost after an outage is said too.
   */
  private async sayLost(err: unknown): Promise<void> {
    if (this.lossLogged || this.asking) return;
    this.asking = true;
    const outage = await this.availability.reportIfPoolDown().finally(() => (this.asking = false));
    if (outage || this.lossLogged) return;
    this.logger.warn(
      `revocation listener lost its connection (${describeDatabaseError(err)}); the database answers, but the token cache is off ` +
        `(every token verified against the database) until the listener reconnects`,
    );
    // Back already, while the pool was asked: both said, in order.
    if (this.up) this.logger.log(`revocation listener connected again after ${this.secondsDown()} s; token cache on`);
    else this.lossLogged = true;
  }

  private secondsDown(): number {
    return Math.round((Date.now() - this.downSince!) / 1000);
  }

  /** Revocations reach this instance: listening, or on the embedded database, which needs no listener. */
  get listening(): boolean {
    return this.database.embedded || this.up;
  }

  onModuleInit(): void {
    if (!this.database.embedded) this.listener.start();
  }

  async onApplicationShutdown(): Promise<void> {
    this.cache.enabled = false;
    await this.listener.stop();
  }

  private onNotice(payload: string): void {
    const id = payload.slice(2);
    if (payload.startsWith('t:')) this.cache.evictToken(id);
    else if (payload.startsWith('u:')) this.cache.evictUser(id);
    else this.cache.clear();
  }
}
