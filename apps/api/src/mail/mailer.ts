import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import nodemailer, { type Transporter } from 'nodemailer';
import { AppConfig } from '../config/app-config.js';

/** One mail: a plain-text part (links on their own line) and a simple HTML part. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The link it is about, for the log line written in place of a mail when there is no SMTP server. */
  link?: string;
}

/** After a failed try, how long to wait before the next: three tries in all. */
const RETRY_DELAYS_MS = [1_000, 5_000];

/**
 * Outbound mail through nodemailer: SMTP_URL (`smtp://` or `smtps://`, credentials in the URL)
 * from MAIL_FROM. Without SMTP_URL (the embedded default of `npm start`), each mail is one log
 * line with its recipient, subject and link. `send` returns at once: callers call it after their
 * transaction committed, so no mail goes out for a change that rolled back, and a slow or broken
 * mail server never turns a request into a 500; a failed mail is tried three times, then logged.
 */
@Injectable()
export class Mailer implements OnApplicationShutdown {
  private readonly logger = new Logger('Mail');
  private readonly transport?: Transporter;
  private readonly inFlight = new Set<Promise<void>>();
  /** Resolved at shutdown: a delivery waiting to try again gives up then rather than hold the process. */
  private stopping = false;
  private stop!: () => void;
  private readonly stopped = new Promise<void>((resolve) => (this.stop = resolve));

  constructor(config: AppConfig) {
    if (config.smtpUrl) {
      // Bounded waits: a mail server that hangs fails the try instead of holding it open.
      this.transport = nodemailer.createTransport(`${config.smtpUrl}`, { from: config.mailFrom });
      this.transport.set('connectionTimeout', 10_000);
    }
  }

  /** Whether mails leave the machine (SMTP_URL) or are written to the log. */
  get delivers(): boolean {
    return this.transport !== undefined;
  }

  send(mail: Mail): void {
    if (!this.transport) {
      this.logger.log(`mail to ${mail.to} (no SMTP_URL, so written here): "${mail.subject}"${mail.link ? ` ${mail.link}` : ''}`);
      return;
    }
    const delivery = this.deliver(this.transport, mail).finally(() => this.inFlight.delete(delivery));
    this.inFlight.add(delivery);
  }

  /** Resolves when every mail sent so far is delivered or given up on (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** Lets the tries under way finish (each bounded by the connection timeout); no new try starts. */
  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.stop();
    await this.settled();
    this.transport?.close();
  }

  private async deliver(transport: Transporter, mail: Mail): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await transport.sendMail({ to: mail.to, subject: mail.subject, text: mail.text, html: mail.html });
        return;
      } catch (err) {
        const delay = RETRY_DELAYS_MS[attempt];
        if (delay === undefined || this.stopping) {
          this.logger.error(`mail to ${mail.to} ("${mail.subject}") not sent after ${attempt + 1} tries: ${(err as Error).message}`);
          return;
        }
        this.logger.warn(`mail to ${mail.to} failed (${(err as Error).message}); trying again in ${delay / 1000} s`);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([new Promise((resolve) => (timer = setTimeout(resolve, delay))), this.stopped]);
        clearTimeout(timer);
      }
    }
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
