import { Injectable, Logger } from '@nestjs/common';
import { Cron, CronExpression, Interval } from '@nestjs/schedule';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AuditEventsRepository } from '../audit/audit-events.repository.js';
import { BackgroundWrites } from '../database/background-writes.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { Sql } from '../database/sql.js';
import { REPLY_WINDOW_SECONDS } from '../device-login/device-login.service.js';
import { DeviceLoginsRepository } from '../device-login/device-logins.repository.js';
import { AccountTokensRepository } from '../accounts/account-tokens.repository.js';
import { RateLimitsRepository } from '../rate-limits/rate-limits.repository.js';
import { RefreshTokensRepository } from '../refresh-tokens/refresh-tokens.repository.js';
import { AccessTokensRepository } from '../tokens/access-tokens.repository.js';
import { WebSessionsRepository } from '../web-sessions/web-sessions.repository.js';

/** Tokens expired or revoked longer ago than this are deleted (the tokens page shows only live ones). */
export const TOKEN_RETENTION_DAYS = 30;
/** Key of the advisory lock that lets one replica at a time run the purge. */
const PURGE_LOCK = 0x70726f73; // 'pros'
/**
 * How often sealed answers past their use are erased: half the poll-reply window, so a reply
 * outlives its window by at most that much. Idempotent UPDATEs, run on every replica.
 */
const ERASE_SEALED_EVERY_MS = (REPLY_WINDOW_SECONDS * 1000) / 2;

export interface PurgeCounts {
  tokens: number;
  refreshTokens: number;
  deviceLogins: number;
  webSessions: number;
  auditEvents: number;
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * What nothing needs any more. Every hour, on one replica at a time (a transaction-level
 * advisory lock; a replica that does not get it skips the round), it deletes tokens expired
 * or revoked more than 30 days ago, device logins that have expired and issued no token
 * still kept, expired web sessions and rate-limit counters, and audit events older than
 * PROSPECT_AUDIT_RETENTION_DAYS. Every 30 s it erases sealed answers kept for a lost reply
 * (a device login's poll reply after its window, a refresh token's successor once it expired).
 * A database that is away is reported to DatabaseAvailability (BackgroundWrites), which says so once.
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger(RetentionService.name);

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly sql: Sql,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly background: BackgroundWrites,
    private readonly accessTokens: AccessTokensRepository,
    private readonly refreshTokens: RefreshTokensRepository,
    private readonly deviceLogins: DeviceLoginsRepository,
    private readonly webSessions: WebSessionsRepository,
    private readonly auditEvents: AuditEventsRepository,
    private readonly rateLimits: RateLimitsRepository,
    private readonly passwordResets: AccountTokensRepository,
  ) {}

  @Cron(CronExpression.EVERY_HOUR, { name: 'retention' })
  scheduledPurge(): void {
    this.background.run('purge ended rows', async () => {
      const counts = await this.purge();
      if (counts && Object.values(counts).some(Boolean)) this.logger.log(`purged ${JSON.stringify(counts)}`);
    });
  }

  @Interval(ERASE_SEALED_EVERY_MS)
  scheduledErase(): void {
    this.background.run('erase sealed answers', () => this.eraseSealedAnswers());
  }

  /** Poll replies whose window ended, and successors sealed under refresh tokens that expired unused. */
  async eraseSealedAnswers(): Promise<void> {
    const now = this.clock.now();
    await this.deviceLogins.eraseSealedRepliesRedeemedBefore(new Date(now.getTime() - REPLY_WINDOW_SECONDS * 1000));
    await this.refreshTokens.eraseExpiredSealedSuccessors(now);
  }

  /** One purge; null when another replica holds the lock. */
  purge(): Promise<PurgeCounts | null> {
    const now = this.clock.now();
    const tokensBefore = new Date(now.getTime() - TOKEN_RETENTION_DAYS * DAY_MS);
    const auditBefore = new Date(now.getTime() - this.config.auditRetentionDays * DAY_MS);
    return this.db.transaction(async (tx) => {
      if (!(await this.sql.tryTransactionLock(tx, PURGE_LOCK))) return null;
      const tokens = await this.accessTokens.deleteEndedBefore(tx, tokensBefore);
      const refreshTokens = await this.refreshTokens.deleteEndedBefore(tx, tokensBefore);
      const deviceLogins = await this.deviceLogins.deleteExpiredWithoutTokens(tx, now);
      const webSessions = await this.webSessions.deleteExpired(tx, now);
      const auditEvents = await this.auditEvents.deleteOlderThan(tx, auditBefore);
      await this.rateLimits.deleteExpired(tx, now);
      await this.passwordResets.deleteExpired(tx, now);
      return { tokens, refreshTokens, deviceLogins, webSessions, auditEvents };
    });
  }
}
