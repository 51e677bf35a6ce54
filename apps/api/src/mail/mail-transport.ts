import { Injectable, Logger } from '@nestjs/common';
import nodemailer, { type Transporter } from 'nodemailer';
import { AppConfig } from '../config/app-config.js';
import type { OutboxMail } from './mail-outbox.repository.js';

/**
 * Each wait on the mail server, well under SHUTDOWN_GRACE_SECONDS (10 s by default): the TCP
 * connection, the server's greeting, and any silence of the server once it talks (a server that
 * stalls after DATA fails the try after 10 s instead of nodemailer's 10 minutes).
 */
export const SMTP_TIMEOUTS_MS = { connection: 5_000, greeting: 5_000, socket: 10_000, dns: 5_000 } as const;

/** A try that failed; `permanent` when the server refused the mail for good (a 5xx answer): trying again changes nothing. */
export class MailDeliveryError extends Error {
  override name = 'MailDeliveryError';
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
  }
}

/**
 * Where one mail goes: SMTP through nodemailer (SMTP_URL, `smtp://` or `smtps://`, credentials
 * in the URL) from MAIL_FROM, a new connection for each mail. Without SMTP_URL (the embedded
 * default of `npm start`) the mail is one log line with its recipient, subject and link.
 */
@Injectable()
export class MailTransport {
  private readonly logger = new Logger('Mail');
  private readonly smtp?: Transporter;

  constructor(config: AppConfig) {
    if (config.smtpUrl) {
      this.smtp = nodemailer.createTransport(
        {
          url: config.smtpUrl,
          connectionTimeout: SMTP_TIMEOUTS_MS.connection,
          greetingTimeout: SMTP_TIMEOUTS_MS.greeting,
          socketTimeout: SMTP_TIMEOUTS_MS.socket,
          dnsTimeout: SMTP_TIMEOUTS_MS.dns,
        },
        { from: config.mailFrom },
      );
    }
  }

  /** Whether mails leave the machine (SMTP_URL) or are written to the log. */
  get delivers(): boolean {
    return this.smtp !== undefined;
  }

  /**
   * Resolves once the server accepted the mail (or it is written to the log).
   * @throws MailDeliveryError
   */
  async deliver(mail: OutboxMail): Promise<void> {
    if (!this.smtp) {
      this.logger.log(`mail to ${mail.to} (no SMTP_URL, so written here): "${mail.subject}"${mail.link ? ` ${mail.link}` : ''}`);
      return;
    }
    try {
      await this.smtp.sendMail({ to: mail.to, subject: mail.subject, text: mail.text, html: mail.html });
    } catch (err) {
      const responseCode = (err as { responseCode?: unknown }).responseCode;
      throw new MailDeliveryError((err as Error).message, typeof responseCode === 'number' && responseCode >= 500 && responseCode < 600);
    }
  }

  close(): void {
    this.smtp?.close();
  }
}
