import { SamlConnectionsService } from '../federation/saml/saml-connections.service.js';
import { Injectable, Logger } from '@nestjs/common';
import { Cron, CronExpression, Interval } from '@nestjs/schedule';
import { AccountLinks } from '../accounts/account-links.js';
import { AuditService } from '../audit/audit.service.js';
import { BackgroundWrites } from '../database/background-writes.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { GrantsService } from '../grants/grants.service.js';
import { DeviceLoginService, REPLY_WINDOW_SECONDS } from '../device-login/device-login.service.js';
import { Mailer } from '../mail/mailer.js';
import { OrganizationDomainsService } from '../organizations/organization-domains.service.js';
import { OrganizationInvitationsService } from '../organizations/organization-invitations.service.js';
import { WebhooksService } from '../webhooks/webhooks.service.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { RefreshTokensService } from '../refresh-tokens/refresh-tokens.service.js';
import { IDEMPOTENCY_WINDOW_HOURS, TokensService } from '../tokens/tokens.service.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { ServiceAccountsService } from '../service-accounts/service-accounts.service.js';

/** Tokens expired or revoked longer ago than this are deleted (the tokens page shows only live ones). */
export const TOKEN_RETENTION_DAYS = 30;
/** Mails sent longer ago than this are deleted from the outbox (their body went when they were sent)… */
export const SENT_MAIL_RETENTION_DAYS = 3;
/** …and mails given up, which the admin's view lists, longer ago than this. */
export const GIVEN_UP_MAIL_RETENTION_DAYS = 30;
/**
 * Organization invitations ended (accepted, revoked, expired) longer ago than this are deleted, and
 * requests to join that can no longer be approved and were made longer ago than this: until then
 * a link's page says why it ended, and the admins see the request as no longer valid.
 */
export const ORG_INVITATION_RETENTION_DAYS = 30;
/** Webhook and back-channel logout deliveries that ended (delivered or given up) longer ago than this are deleted: the delivery log shows the month. */
export const WEBHOOK_DELIVERY_RETENTION_DAYS = 30;
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
/** Rows one purge statement deletes at most. */
export const PURGE_BATCH = 10_000;
/** How long one purge statement may run: finding a batch may mean scanning a table of millions. */
const PURGE_STATEMENT_TIMEOUT_MS = 60_000;

/**
 * What nothing needs any more. Every hour, on one replica at a time (a transaction-level
 * advisory lock; a replica that does not get it skips the round), it deletes tokens expired
 * or revoked more than 30 days ago, device logins that have expired and issued no token
 * still kept, expired web sessions and rate-limit counters, mails sent more than 3 days ago
 * (given up: 30 days), answers kept for an Idempotency-Key past their day, audit events older
 * than PROSPECT_AUDIT_RETENTION_DAYS, organization invitations ended more than 30 days ago and
 * requests to join made as long ago that can no longer be approved, and the SAML assertions used
 * whose NotOnOrAfter (and the skew) has passed. Every 30 s it erases sealed answers kept for a lost reply
 * (a device login's poll reply after its window, a refresh token's successor once it expired).
 * A database that is away is reported to DatabaseAvailability (BackgroundWrites), which says so once.
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger(RetentionService.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly background: BackgroundWrites,
    private readonly tokens: TokensService,
    private readonly refreshTokens: RefreshTokensService,
    private readonly deviceLogins: DeviceLoginService,
    private readonly grants: GrantsService,
    private readonly webSessions: WebSessions,
    private readonly audit: AuditService,
    private readonly rateLimits: RateLimits,
    private readonly accountLinks: AccountLinks,
    private readonly mailer: Mailer,
    private readonly orgInvitations: OrganizationInvitationsService,
    private readonly orgDomains: OrganizationDomainsService,
    private readonly serviceAccounts: ServiceAccountsService,
    private readonly webhooks: WebhooksService,
    private readonly saml: SamlConnectionsService,
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

  /** Poll replies whose window ended, and successors sealed under refresh tokens whose replay window ended. */
  async eraseSealedAnswers(): Promise<void> {
    const now = this.clock.now();
    await this.deviceLogins.eraseSealedRepliesRedeemedBefore(new Date(now.getTime() - REPLY_WINDOW_SECONDS * 1000));
    await this.refreshTokens.eraseSealedSuccessorsPastReplay(now);
  }

  /**
   * One purge, each table in batches of PURGE_BATCH rows, each batch its own transaction holding
   * the purge lock: however much has piled up (a first purge after an import, issue #21's growth
   * run), no statement runs long, locks much or holds back vacuum. Null when another replica held
   * the lock before anything was deleted; a replica that takes it over midway finishes the job.
   */
  async purge(): Promise<PurgeCounts | null> {
    const now = this.clock.now();
    const tokensBefore = new Date(now.getTime() - TOKEN_RETENTION_DAYS * DAY_MS);
    const auditBefore = new Date(now.getTime() - this.config.auditRetentionDays * DAY_MS);
    const mailSentBefore = new Date(now.getTime() - SENT_MAIL_RETENTION_DAYS * DAY_MS);
    const mailGivenUpBefore = new Date(now.getTime() - GIVEN_UP_MAIL_RETENTION_DAYS * DAY_MS);
    const orgInvitationsBefore = new Date(now.getTime() - ORG_INVITATION_RETENTION_DAYS * DAY_MS);
    const steps: Array<[keyof PurgeCounts | null, (tx: Tx, limit: number) => Promise<number>]> = [
      ['tokens', (tx, limit) => this.tokens.purgeEndedBefore(tx, tokensBefore, limit)],
      ['refreshTokens', (tx, limit) => this.refreshTokens.purgeEndedBefore(tx, tokensBefore, limit)],
      // After the tokens: a login is kept while a token of its family is.
      ['deviceLogins', (tx, limit) => this.deviceLogins.purgeExpiredWithoutTokens(tx, now, limit)],
      // After the logins: a grant is kept while a token of it is, or a login not collected yet points to it.
      [null, (tx, limit) => this.grants.purgeUnusedBefore(tx, now, limit)],
      ['webSessions', (tx, limit) => this.webSessions.purgeExpired(tx, now, limit)],
      ['auditEvents', (tx, limit) => this.audit.purgeOlderThan(tx, auditBefore, limit)],
      [null, (tx, limit) => this.rateLimits.purgeExpired(tx, now, limit)],
      [null, (tx, limit) => this.accountLinks.purgeExpired(tx, now, limit)],
      [null, (tx, limit) => this.mailer.purgeEndedBefore(tx, mailSentBefore, mailGivenUpBefore, limit)],
      [null, (tx, limit) => this.webhooks.purgeEndedBefore(tx, new Date(now.getTime() - WEBHOOK_DELIVERY_RETENTION_DAYS * DAY_MS), limit)],
      // Answers kept for an Idempotency-Key, once its window is over.
      [null, (tx, limit) => this.tokens.purgeIdempotentRepliesBefore(tx, new Date(now.getTime() - IDEMPOTENCY_WINDOW_HOURS * 3600 * 1000), limit)],
      [null, (tx, limit) => this.orgInvitations.purgeEndedBefore(tx, orgInvitationsBefore, limit)],
      [null, (tx, limit) => this.orgDomains.purgeStaleJoinRequests(tx, orgInvitationsBefore, limit)],
      // Service accounts' client assertion ids, once past their exp (a replay is refused as expired then).
      [null, (tx, limit) => this.serviceAccounts.purgeExpiredAssertions(tx, now, limit)],
      // Subject tokens exchanged for service accounts' tokens, once past their exp (likewise).
      [null, (tx, limit) => this.serviceAccounts.purgeExpiredSubjectTokens(tx, now, limit)],
      // SAML assertions used, once past their NotOnOrAfter and the skew (an expired one is refused anyway).
      [null, (tx, limit) => this.saml.purgeExpiredAssertionUses(tx, now, limit)],
    ];
    const counts: PurgeCounts = { tokens: 0, refreshTokens: 0, deviceLogins: 0, webSessions: 0, auditEvents: 0 };
    let batches = 0;
    for (const [name, deleteBatch] of steps) {
      for (;;) {
        const deleted = await this.uow.run(async (tx) => {
          if (!(await this.uow.tryLock(tx, PURGE_LOCK))) return null;
          // A batch may scan a large table for its rows: it gets longer than a request's statement.
          await this.uow.setStatementTimeout(tx, PURGE_STATEMENT_TIMEOUT_MS);
          return deleteBatch(tx, PURGE_BATCH);
        });
        if (deleted === null) return batches ? counts : null;
        batches++;
        if (name) counts[name] += deleted;
        if (deleted < PURGE_BATCH) break;
      }
    }
    return counts;
  }
}
