import type { TestApp } from './test-app.js';

/*
 * SQL: the Mailer queues and the worker sends, and neither answers what became of one mail, nor
 * lets a mail be older or wait longer than it is: tests read and age the outbox's rows here.
 */

/** A mail in the outbox as stored: its body and link are erased once it is sent or given up. */
export interface OutboxRow {
  id: string;
  attempts: number;
  text: string | null;
  html: string | null;
  link: string | null;
  sent_at: Date | null;
  given_up_at: Date | null;
  last_error: string | null;
}

/** The outbox's mails to `recipient`, oldest first. */
export function outboxRows(api: TestApp, recipient: string): Promise<OutboxRow[]> {
  return api.dataSource.query(`SELECT id, attempts, text, html, link, sent_at, given_up_at, last_error FROM mail_outbox WHERE recipient = $1 ORDER BY created_at`, [recipient]);
}

/** Dates the mails sent to `recipient` `days` back, as if sent then. */
export async function markMailSentDaysAgo(api: TestApp, recipient: string, days: number): Promise<void> {
  await api.dataSource.query(`UPDATE mail_outbox SET sent_at = now() - make_interval(days => $2) WHERE recipient = $1`, [recipient, days]);
}

/** Queues a mail to `recipient` whose next try is an hour away (as after a failure), so the worker leaves it alone. */
export async function queueMailWaitingAnHour(api: TestApp, recipient: string): Promise<void> {
  await api.dataSource.query(`INSERT INTO mail_outbox (recipient, subject, text, html, next_attempt_at) VALUES ($1, 'Later', 'later', '<p>later</p>', now() + interval '1 hour')`, [recipient]);
}

/** Removes every mail to `recipient` from the outbox, sent or not. */
export async function dropMailsTo(api: TestApp, recipient: string): Promise<void> {
  await api.dataSource.query(`DELETE FROM mail_outbox WHERE recipient = $1`, [recipient]);
}
