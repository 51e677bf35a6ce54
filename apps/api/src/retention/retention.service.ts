import { Injectable, Logger } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';

/** Tokens expired or revoked longer ago than this are deleted (the tokens page shows only live ones). */
export const TOKEN_RETENTION_DAYS = 30;
/** Key of the advisory lock that lets one replica at a time run the purge. */
const PURGE_LOCK = 0x70726f73; // 'pros'

export interface PurgeCounts {
  tokens: number;
  refreshTokens: number;
  deviceLogins: number;
  webSessions: number;
  auditEvents: number;
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * Deletes what nothing needs any more, every hour, on one replica at a time (a
 * transaction-level advisory lock; a replica that does not get it skips the round):
 * tokens expired or revoked more than 30 days ago, device logins that have expired and
 * issued no token still kept, expired web sessions, and audit events older than
 * PROSPECT_AUDIT_RETENTION_DAYS.
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger(RetentionService.name);

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  @Cron(CronExpression.EVERY_HOUR, { name: 'retention' })
  async scheduledPurge(): Promise<void> {
    try {
      const counts = await this.purge();
      if (counts && Object.values(counts).some(Boolean)) this.logger.log(`purged ${JSON.stringify(counts)}`);
    } catch (err) {
      this.logger.warn(`retention purge failed: ${(err as Error).message}`);
    }
  }

  /** One purge; null when another replica holds the lock. */
  purge(): Promise<PurgeCounts | null> {
    const now = this.clock.now();
    const tokensBefore = new Date(now.getTime() - TOKEN_RETENTION_DAYS * DAY_MS);
    const auditBefore = new Date(now.getTime() - this.config.auditRetentionDays * DAY_MS);
    return this.db.transaction(async (tx) => {
      const [{ locked }] = (await tx.query(`SELECT pg_try_advisory_xact_lock($1) AS locked`, [PURGE_LOCK])) as Array<{ locked: boolean }>;
      if (!locked) return null;
      const deleted = async (sql: string, values: unknown[]) => ((await tx.query(sql, values)) as [unknown[], number])[1];
      const tokens = await deleted(`DELETE FROM access_tokens WHERE expires_at < $1 OR revoked_at < $1`, [tokensBefore]);
      const refreshTokens = await deleted(`DELETE FROM refresh_tokens WHERE expires_at < $1 OR revoked_at < $1`, [tokensBefore]);
      // A device login is its tokens' family: kept while any of them is.
      const deviceLogins = await deleted(
        `DELETE FROM device_logins d WHERE d.expires_at < $1
            AND NOT EXISTS (SELECT 1 FROM access_tokens t WHERE t.device_login_id = d.id)
            AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.device_login_id = d.id)`,
        [now],
      );
      const webSessions = await deleted(`DELETE FROM web_sessions WHERE expire < $1`, [now]);
      const auditEvents = await deleted(`DELETE FROM auth_events WHERE created_at < $1`, [auditBefore]);
      // Rate-limit counters past their window (rate-limiter-flexible keeps `expire` in ms).
      await deleted(`DELETE FROM rate_limits WHERE expire < $1`, [now.getTime()]);
      return { tokens, refreshTokens, deviceLogins, webSessions, auditEvents };
    });
  }
}
