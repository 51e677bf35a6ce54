import { performance } from 'node:perf_hooks';
import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { AppConfig } from '../config/app-config.js';
import { DatabaseAvailability, isDatabaseUnavailable } from '../database/database-availability.js';
import { OutboxWorker, retryDelaySeconds } from '../database/outbox-worker.js';
import { Metrics } from '../metrics/metrics.js';
import { type ClaimedMail, MailOutboxRepository } from './mail-outbox.repository.js';
import { MailDeliveryError, MailTransport } from './mail-transport.js';
import { maskAddress } from './mask-address.js';

/** How often a replica looks for due mail when nothing woke it (another replica's mail, a retry coming due). */
export const POLL_MS = 1_000;
/** Mails one replica sends at once. */
const CONCURRENT_SENDS = 5;
/**
 * The longest one send may take, whatever the server does: its timeouts bound each wait
 * (mail-transport.ts), this bounds their sum. A try cut short counts as failed.
 */
const SEND_DEADLINE_MS = 30_000;
/** How long a claim lasts: longer than any send may take, so only a replica that died (kill -9) lets one expire. */
const CLAIM_SECONDS = 2 * (SEND_DEADLINE_MS / 1000);
/** The longest wait between two tries. */
const MAX_RETRY_SECONDS = 30 * 60;
/** A reason is kept to this length. */
const MAX_REASON = 500;
/** How often a replica tries again to record a sent mail while the database is unavailable. */
const RECORD_RETRY_MS = 500;

/**
 * The outbox's worker, on every replica: it claims due mails (CONCURRENT_SENDS at a time, one
 * statement with `FOR UPDATE SKIP LOCKED`, so two replicas never hold one row), sends each, and
 * marks it sent; a failed try is due again after MAIL_RETRY_BASE_SECONDS, doubling to at most 30
 * minutes, until MAIL_GIVE_UP_HOURS after it was queued, when it is given up with the reason kept
 * (at once when the server refused it for good). It wakes when a mail of this replica commits
 * (Mailer) and polls every POLL_MS for the rest. The loop, its claims and its shutdown are
 * database/outbox-worker.ts's, as the webhook sender's are.
 *
 * Delivery is at least once: a replica that dies after the server accepted a mail and before
 * marking it sent leaves a claim that expires (CLAIM_SECONDS), and the next replica sends it again.
 * A database that is only away (a failover, a restart) does not: the replica holds on to the
 * outcome and records it once the database is back, while its claim holds (recordSent).
 *
 * Shutdown (main.ts calls stop() at SIGTERM): no new claim from then on; a send under way may
 * finish until a moment before the process must exit, then it is abandoned and its claim given
 * back, so the next replica (or this one restarted) sends it. The process exits within
 * SHUTDOWN_GRACE_SECONDS whatever the mail server does.
 */
@Injectable()
export class MailWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('MailOutbox');
  private readonly worker: OutboxWorker<ClaimedMail>;

  constructor(
    private readonly outbox: MailOutboxRepository,
    private readonly transport: MailTransport,
    private readonly metrics: Metrics,
    private readonly config: AppConfig,
    private readonly availability: DatabaseAvailability,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.worker = new OutboxWorker<ClaimedMail>({
      name: 'MailOutbox',
      rows: 'mail(s)',
      pollMs: POLL_MS,
      concurrency: CONCURRENT_SENDS,
      claim: (limit) => this.outbox.claimDue(limit, CLAIM_SECONDS),
      work: (mail) => this.send(mail),
      release: (ids, claimedUntil, reason) => this.outbox.release(ids, claimedUntil, reason),
      availability,
    });
  }

  onApplicationBootstrap(): void {
    // Only the serving application sends: a one-off command (main.js purge) builds the same
    // modules without an HTTP server, and must neither send nor write mail to its log.
    if (!this.adapterHost.httpAdapter) return;
    this.worker.start();
  }

  /** Looks for due mail now (a mail was just committed) instead of at the next poll. */
  wake(): void {
    this.worker.wake();
  }

  /**
   * No new claim from now on; sends under way may go on until shortly before `exitBy` (a
   * Date.now() value), when the shutdown hook abandons them.
   */
  stop(exitBy: number): void {
    this.worker.stop(exitBy);
  }

  /** Before the pool closes: waits for the sends under way until shortly before the grace ends, then gives back the claims of the rest. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.shutdown(Date.now() + this.config.shutdownGraceSeconds * 1000);
    this.transport.close();
  }

  /** One try of one claimed mail, and its outcome recorded (unless it was abandoned meanwhile). */
  private async send(mail: ClaimedMail): Promise<void> {
    const started = performance.now();
    let failure: MailDeliveryError | undefined;
    try {
      await withDeadline(this.transport.deliver(mail), SEND_DEADLINE_MS);
    } catch (err) {
      failure = err instanceof MailDeliveryError ? err : new MailDeliveryError((err as Error).message, false);
    }
    if (this.worker.isAbandoned(mail.id)) return;
    try {
      if (!failure) {
        await this.recordSent(mail, started);
        this.metrics.mail('sent');
        this.logger.debug(`mail ${mail.id} to ${maskAddress(mail.to)} sent (try ${mail.attempts})`);
        return;
      }
      const reason = failure.message.slice(0, MAX_REASON);
      // On the database's clock: the claim's time plus what this try took.
      const failedAt = mail.claimedAt.getTime() + (performance.now() - started);
      const untilGiveUp = (mail.createdAt.getTime() + this.config.mailGiveUpHours * 3_600_000 - failedAt) / 1000;
      // No jitter: a mail server back up takes the few mails of one replica at once.
      const wait = Math.min(retryDelaySeconds(this.config.mailRetryBaseSeconds, mail.attempts, MAX_RETRY_SECONDS), untilGiveUp);
      if (failure.permanent || wait <= 0) {
        await this.outbox.giveUp(mail.id, mail.claimedUntil, reason);
        this.metrics.mail('failed');
        this.logger.error(`mail ${mail.id} to ${mail.to} ("${mail.subject}") given up after ${mail.attempts} tries: ${reason}`);
      } else {
        await this.outbox.retryLater(mail.id, mail.claimedUntil, wait, reason);
        this.metrics.mail('retried');
        this.logger.warn(`mail ${mail.id} to ${mail.to} failed (${reason}); trying again in ${Math.round(wait)} s`);
      }
    } catch (err) {
      // Its claim expires and another try follows: a mail that went out may go out twice (at least once).
      this.worker.report(`record the outcome of mail ${mail.id}`, err);
    }
  }

  /**
   * Marks a delivered mail sent; while the database is unavailable, tries again every
   * RECORD_RETRY_MS until its claim would expire (the claim keeps other replicas off the row
   * meanwhile). Giving up at once would leave the claim to expire and the mail to be sent a
   * second time a minute later, as it was after a failover (issue #49). Stops at shutdown.
   */
  private async recordSent(mail: ClaimedMail, sendStarted: number): Promise<void> {
    // The claim's length on the database's clock, counted here from when the send started (just after the claim).
    const claimEnds = sendStarted + (mail.claimedUntil.getTime() - mail.claimedAt.getTime());
    for (;;) {
      try {
        await this.outbox.markSent(mail.id);
        return;
      } catch (err) {
        if (!isDatabaseUnavailable(err) || this.worker.closed || this.worker.isAbandoned(mail.id) || performance.now() + RECORD_RETRY_MS >= claimEnds) throw err;
        this.availability.report(err);
        await new Promise((resolve) => setTimeout(resolve, RECORD_RETRY_MS));
      }
    }
  }
}

/** The promise, or a failed try once `ms` passed (the send itself is left to its own timeouts). */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new MailDeliveryError(`no answer from the mail server within ${ms / 1000} s`, false)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
