import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { DatabaseAvailability, isDatabaseUnavailable } from '../database/database-availability.js';
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
 * flushed and bypassed. A database that went away is reported to
 * DatabaseAvailability, which says so once however often the listener tries
 * to reconnect meanwhile.
 *
 * On the embedded database (one process by construction; PGlite delivers no
 * notifications over its socket) there is no listener and no cache.
 */
@Injectable()
export class RevocationListener implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(RevocationListener.name);
  private readonly listener: NotificationListener;
  private up = false;

  constructor(
    private readonly cache: VerifiedTokenCache,
    private readonly database: DatabaseInfo,
    availability: DatabaseAvailability,
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
      },
      onDown: (err, firstSince) => {
        this.up = false;
        cache.enabled = false;
        if (isDatabaseUnavailable(err)) availability.report(err);
        else if (firstSince) {
          this.logger.warn(`token revocation listener down (${(err as Error).message}); verifying every token against the database until it is back`);
        }
      },
    });
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
