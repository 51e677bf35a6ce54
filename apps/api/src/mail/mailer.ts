import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner } from 'typeorm';
import { Metrics } from '../metrics/metrics.js';
import { MailOutboxRepository } from './mail-outbox.repository.js';
import { MailTransport } from './mail-transport.js';
import { MailWorker } from './mail-worker.js';

/** One mail: a plain-text part (links on their own line) and a simple HTML part. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The link it is about, for the log line written in place of a mail when there is no SMTP server. */
  link?: string;
}

/** How often settled() looks at the outbox again. */
const SETTLED_CHECK_MS = 25;

/**
 * Outbound mail, through the outbox (mail_outbox, issue #32): `send` queues a mail as a row,
 * inside the caller's transaction when given, so a link and the mail that carries it commit
 * together or not at all, and a mail is never lost to a mail server that is down or a restart.
 * Every replica's MailWorker sends what is queued (mail-worker.ts: retries, giving up,
 * shutdown). A failure to queue is the caller's error: a page says "sent" only for what is queued.
 */
@Injectable()
export class Mailer {
  private readonly logger = new Logger('Mail');
  /** Mails being queued now, for settled(). */
  private readonly queueing = new Set<Promise<void>>();
  /** Mails queued in a transaction still open, by its query runner: counted and sent once it commits. */
  private readonly awaitingCommit = new WeakMap<QueryRunner, number>();

  constructor(
    private readonly outbox: MailOutboxRepository,
    private readonly worker: MailWorker,
    private readonly transport: MailTransport,
    private readonly metrics: Metrics,
    @InjectDataSource() dataSource: DataSource,
  ) {
    // A mail queued in a transaction can be sent once it commits: wake this replica's worker then,
    // rather than at its next poll.
    const watcher: EntitySubscriberInterface = {
      afterTransactionCommit: ({ queryRunner }) => this.transactionEnded(queryRunner, true),
      afterTransactionRollback: ({ queryRunner }) => this.transactionEnded(queryRunner, false),
    };
    (dataSource.subscribers as EntitySubscriberInterface[]).push(watcher);
  }

  /** Whether mails leave the machine (SMTP_URL) or are written to the log. */
  get delivers(): boolean {
    return this.transport.delivers;
  }

  /**
   * Queues `mail`, in `tx` when given (it then goes only if that transaction commits). Resolves
   * once it is queued; a failure (the database) rejects, and is logged even if nobody awaits it.
   */
  send(mail: Mail, tx?: EntityManager): Promise<void> {
    const queued = this.enqueue(mail, tx);
    this.queueing.add(queued);
    queued.then(
      () => this.queueing.delete(queued),
      (err: Error) => {
        this.queueing.delete(queued);
        this.logger.warn(`could not queue the mail to ${mail.to} ("${mail.subject}"): ${err.message}`);
      },
    );
    return queued;
  }

  /** Resolves when every mail queued so far (on any replica) is sent or given up (tests). */
  async settled(): Promise<void> {
    while (this.queueing.size) await Promise.allSettled([...this.queueing]);
    this.worker.wake();
    while ((await this.outbox.countUnfinished()) > 0) await new Promise((resolve) => setTimeout(resolve, SETTLED_CHECK_MS));
  }

  private async enqueue(mail: Mail, tx?: EntityManager): Promise<void> {
    await this.outbox.insert(mail, tx);
    const runner = tx?.queryRunner;
    if (runner?.isTransactionActive) this.awaitingCommit.set(runner, (this.awaitingCommit.get(runner) ?? 0) + 1);
    else this.queued(1);
  }

  private transactionEnded(runner: QueryRunner | undefined, committed: boolean): void {
    // A savepoint's end leaves the transaction open: wait for the real end.
    if (!runner || runner.isTransactionActive) return;
    const count = this.awaitingCommit.get(runner);
    if (!count) return;
    this.awaitingCommit.delete(runner);
    if (committed) this.queued(count);
  }

  private queued(count: number): void {
    this.metrics.mail('queued', count);
    this.worker.wake();
  }
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A mail of a few paragraphs and at most one link: the link on its own line in the text part, a
 * button-like link in the HTML part. Every piece of text is escaped in the HTML.
 */
export function composeMail(to: string, subject: string, parts: { paragraphs: string[]; link?: { url: string; label: string }; footer?: string }): Mail {
  const text = [...parts.paragraphs, ...(parts.link ? [`${parts.link.label}:`, parts.link.url] : []), ...(parts.footer ? ['', parts.footer] : [])].join('\n\n');
  const html = [
    '<!doctype html><html><body style="font-family: system-ui, sans-serif; color: #1c1e21; line-height: 1.5">',
    ...parts.paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`),
    ...(parts.link ? [`<p><a href="${escapeHtml(parts.link.url)}" style="color: #1a56db">${escapeHtml(parts.link.label)}</a></p>`, `<p style="color: #5f6368; font-size: 13px">${escapeHtml(parts.link.url)}</p>`] : []),
    ...(parts.footer ? [`<p style="color: #5f6368; font-size: 13px">${escapeHtml(parts.footer)}</p>`] : []),
    '</body></html>',
  ].join('\n');
  return { to, subject, text: `${text}\n`, html, link: parts.link?.url };
}
