import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface CapturedMail {
  to: string[];
  /** The raw message (headers and MIME parts). */
  raw: string;
  subject: string;
  /** The text/plain part, decoded (quoted-printable). */
  text: string;
  /** The text/html part, decoded. */
  html: string;
}

const decodeQuotedPrintable = (body: string) =>
  Buffer.from(body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8');

/** The decoded body of the MIME part of this content type (nodemailer writes quoted-printable or 7bit). */
function part(raw: string, type: string): string {
  const start = raw.indexOf(`Content-Type: ${type}`);
  if (start < 0) return '';
  const headersEnd = raw.indexOf('\r\n\r\n', start);
  const end = raw.indexOf('\r\n--', headersEnd);
  const body = raw.slice(headersEnd + 4, end < 0 ? undefined : end);
  return /Content-Transfer-Encoding: quoted-printable/.test(raw.slice(start, headersEnd)) ? decodeQuotedPrintable(body) : body;
}

/** A real SMTP server in this process (smtp-server, no TLS, no auth) that keeps what it receives. */
export class SmtpSink {
  readonly mails: CapturedMail[] = [];
  private constructor(
    private readonly server: SMTPServer,
    readonly url: string,
  ) {}

  static async start(): Promise<SmtpSink> {
    let sink: SmtpSink | undefined;
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          const subject = /^Subject: (.*)$/m.exec(raw)?.[1]?.trim() ?? '';
          sink!.mails.push({ to: session.envelope.rcptTo.map((r) => r.address), raw, subject, text: part(raw, 'text/plain'), html: part(raw, 'text/html') });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.server.address() as AddressInfo;
    sink = new SmtpSink(server, `smtp://127.0.0.1:${port}`);
    return sink;
  }

  /** The mails sent to `address`, oldest first. */
  to(address: string): CapturedMail[] {
    return this.mails.filter((mail) => mail.to.includes(address));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
