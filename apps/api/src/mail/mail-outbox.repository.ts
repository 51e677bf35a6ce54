import { Injectable } from '@nestjs/common';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** A mail as it is queued: its recipient, subject, both parts, and the link it carries (for the log line without SMTP). */
export interface OutboxMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  link?: string;
}

/** A row a worker claimed: the mail, how many tries it has had (this one counted), and the claim. */
export interface ClaimedMail extends OutboxMail {
  id: string;
  attempts: number;
  createdAt: Date;
  /** The database's time when it was claimed: the give-up rule compares it with createdAt, on one clock. */
  claimedAt: Date;
  /** Identifies this claim: a later claim by another replica (after this one expired) has another. */
  claimedUntil: Date;
}

/** How many rows are in each state, and the oldest one still waiting. */
export interface OutboxCounts {
  /** Not sent nor given up, and not being sent now. */
  waiting: number;
  /** Claimed by a replica that is sending it now (its claim has not expired). */
  sending: number;
  sent: number;
  givenUp: number;
}

export interface WaitingMail {
  id: string;
  to: string;
  subject: string;
  createdAt: Date;
  /** Seconds since it was queued, on the database's clock. */
  ageSeconds: number;
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
}

export interface GivenUpMail {
  id: string;
  to: string;
  subject: string;
  createdAt: Date;
  givenUpAt: Date;
  attempts: number;
  reason: string | null;
}

/** Not sent and not given up. */
const UNFINISHED = `sent_at IS NULL AND given_up_at IS NULL`;
/** The body may hold a working link: it goes when the row ends. */
const ERASE_BODY = `text = NULL, html = NULL, link = NULL`;

/**
 * Every statement on `mail_outbox` (migration 028): queueing, the workers' claims and outcomes,
 * the admin's view and retention. Each change is one statement; times are the database's.
 */
@Injectable()
export class MailOutboxRepository {
  constructor(private readonly sql: Sql) {}

  /** Queues a mail (in `tx` when given: it exists only if that transaction commits). */
  async insert(mail: OutboxMail, tx?: Tx): Promise<void> {
    await this.sql.rows(
      `INSERT INTO mail_outbox (recipient, subject, text, html, link) VALUES ($1, $2, $3, $4, $5)`,
      [mail.to, mail.subject, mail.text, mail.html, mail.link ?? null],
      tx,
    );
  }

  /**
   * Claims up to `limit` due rows, soonest first, for `leaseSeconds`, and counts the try, in one
   * statement: rows another replica holds locked are skipped, and a row claimed once is not due
   * again until its claim expires (a replica killed while sending: another sends it then).
   */
  claimDue(limit: number, leaseSeconds: number): Promise<ClaimedMail[]> {
    return this.sql.rows<ClaimedMail>(
      `WITH due AS (
         SELECT id FROM mail_outbox
          WHERE ${UNFINISHED} AND next_attempt_at <= now() AND (claimed_until IS NULL OR claimed_until <= now())
          ORDER BY next_attempt_at
          LIMIT $1
          FOR UPDATE SKIP LOCKED
       )
       -- To the millisecond, as a JavaScript Date holds it: the claim is matched by equality later.
       UPDATE mail_outbox o SET claimed_until = date_trunc('milliseconds', now() + make_interval(secs => $2)), attempts = o.attempts + 1
         FROM due WHERE o.id = due.id
       RETURNING o.id, o.recipient AS "to", o.subject, o.text, o.html, o.link, o.attempts, o.created_at AS "createdAt",
                 now() AS "claimedAt", o.claimed_until AS "claimedUntil"`,
      [limit, leaseSeconds],
    );
  }

  /** The mail went out: it is done, whoever holds it now. */
  async markSent(id: string): Promise<void> {
    await this.sql.rows(`UPDATE mail_outbox SET sent_at = now(), claimed_until = NULL, last_error = NULL, ${ERASE_BODY} WHERE id = $1 AND ${UNFINISHED}`, [id]);
  }

  /** A failed try: due again in `delaySeconds`, with the reason; only while `claimedUntil` is still this row's claim. */
  async retryLater(id: string, claimedUntil: Date, delaySeconds: number, reason: string): Promise<void> {
    await this.sql.rows(
      `UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => $3), claimed_until = NULL, last_error = $4
        WHERE id = $1 AND claimed_until = $2 AND ${UNFINISHED}`,
      [id, claimedUntil, delaySeconds, reason],
    );
  }

  /** The last failed try: given up, with the reason; only while `claimedUntil` is still this row's claim. */
  async giveUp(id: string, claimedUntil: Date, reason: string): Promise<void> {
    await this.sql.rows(
      `UPDATE mail_outbox SET given_up_at = now(), claimed_until = NULL, last_error = $3, ${ERASE_BODY}
        WHERE id = $1 AND claimed_until = $2 AND ${UNFINISHED}`,
      [id, claimedUntil, reason],
    );
  }

  /** Claims given back unfinished (a send abandoned at shutdown): due at once for any replica, with why. */
  async release(ids: string[], claimedUntil: Date, reason: string): Promise<void> {
    await this.sql.rows(
      `UPDATE mail_outbox SET claimed_until = NULL, last_error = $3 WHERE id = ANY($1::uuid[]) AND claimed_until = $2 AND ${UNFINISHED}`,
      [ids, claimedUntil, reason],
    );
  }

  /** How many mails are neither sent nor given up. */
  async countUnfinished(): Promise<number> {
    const [row] = await this.sql.rows<{ n: number }>(`SELECT count(*)::int AS n FROM mail_outbox WHERE ${UNFINISHED}`, []);
    return row!.n;
  }

  /** Seconds the oldest unfinished mail has waited since it was queued; 0 when none waits. */
  async oldestWaitingSeconds(): Promise<number> {
    const [row] = await this.sql.rows<{ age: number }>(
      `SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS age FROM mail_outbox WHERE ${UNFINISHED}`,
      [],
    );
    return row!.age;
  }

  async counts(): Promise<OutboxCounts> {
    const [row] = await this.sql.rows<OutboxCounts>(
      `SELECT count(*) FILTER (WHERE ${UNFINISHED} AND (claimed_until IS NULL OR claimed_until <= now()))::int AS waiting,
              count(*) FILTER (WHERE ${UNFINISHED} AND claimed_until > now())::int AS sending,
              count(*) FILTER (WHERE sent_at IS NOT NULL)::int AS sent,
              count(*) FILTER (WHERE given_up_at IS NOT NULL)::int AS "givenUp"
         FROM mail_outbox`,
      [],
    );
    return row!;
  }

  /** The unfinished mail queued first, or undefined. */
  async oldestWaiting(): Promise<WaitingMail | undefined> {
    const [row] = await this.sql.rows<WaitingMail>(
      `SELECT id, recipient AS "to", subject, created_at AS "createdAt", EXTRACT(EPOCH FROM now() - created_at)::float8 AS "ageSeconds",
              attempts, next_attempt_at AS "nextAttemptAt", last_error AS "lastError"
         FROM mail_outbox WHERE ${UNFINISHED} ORDER BY created_at LIMIT 1`,
      [],
    );
    return row;
  }

  /** The `limit` mails given up last, latest first. */
  lastGivenUp(limit: number): Promise<GivenUpMail[]> {
    return this.sql.rows<GivenUpMail>(
      `SELECT id, recipient AS "to", subject, created_at AS "createdAt", given_up_at AS "givenUpAt", attempts, last_error AS "reason"
         FROM mail_outbox WHERE given_up_at IS NOT NULL ORDER BY given_up_at DESC LIMIT $1`,
      [limit],
    );
  }

  /** At most `limit` rows sent before `sentBefore` or given up before `givenUpBefore` (retention); how many. */
  deleteEndedBefore(tx: Tx, sentBefore: Date, givenUpBefore: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM mail_outbox WHERE id IN (
         (SELECT id FROM mail_outbox WHERE sent_at < $1 LIMIT $3)
         UNION ALL
         (SELECT id FROM mail_outbox WHERE given_up_at < $2 LIMIT $3)
         LIMIT $3)`,
      [sentBefore, givenUpBefore, limit],
      tx,
    );
  }
}
