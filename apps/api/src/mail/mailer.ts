import { Injectable, Logger } from '@nestjs/common';
import { Metrics } from '../metrics/metrics.js';
import { MailOutboxRepository } from './mail-outbox.repository.js';
import { MailTransport } from './mail-transport.js';
import { MailWorker } from './mail-worker.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';

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

  constructor(
    private readonly outbox: MailOutboxRepository,
    private readonly worker: MailWorker,
    private readonly transport: MailTransport,
    private readonly metrics: Metrics,
    private readonly uow: UnitOfWork,
  ) {}

  /** Whether mails leave the machine (SMTP_URL) or are written to the log. */
  get delivers(): boolean {
    return this.transport.delivers;
  }

  /**
   * Queues `mail`, in `tx` when given (it then goes only if that transaction commits). Resolves
   * once it is queued; a failure (the database) rejects, and is logged even if nobody awaits it.
   */
  send(mail: Mail, tx?: Tx): Promise<void> {
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

  /** At most `limit` mails sent before `sentBefore` or given up before `givenUpBefore`, in `tx` (retention); how many. */
  purgeEndedBefore(tx: Tx, sentBefore: Date, givenUpBefore: Date, limit: number): Promise<number> {
    return this.outbox.deleteEndedBefore(tx, sentBefore, givenUpBefore, limit);
  }

  private async enqueue(mail: Mail, tx?: Tx): Promise<void> {
    await this.outbox.insert(mail, tx);
    // A mail queued in a transaction can be sent once it commits: counted and this replica's
    // worker woken then (not at all after a rollback), rather than at the worker's next poll.
    if (tx) this.uow.afterCommit(tx, () => this.queued());
    else this.queued();
  }

  private queued(): void {
    this.metrics.mail('queued', 1);
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
