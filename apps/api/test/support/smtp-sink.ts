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

/**
 * How the sink answers a message: `accept` it (250, kept in `mails`); `stall` after DATA (it reads
 * the whole message and never answers, as a hung server does; counted in `stalled`, not kept);
 * `reject` every recipient for good (550).
 */
export type SinkMode = 'accept' | 'stall' | 'reject';

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

/**
 * A real SMTP server in this process (smtp-server, no TLS, no auth) that keeps what it receives.
 * It can be stopped (the mail server is down) and started again on the same port, and made to
 * stall, refuse or answer slowly.
 */
export class SmtpSink {
  readonly mails: CapturedMail[] = [];
  /** Messages received in full in `stall` mode and never answered. */
  stalled = 0;
  mode: SinkMode = 'accept';
  /** How long each message waits before its 250 (a slow server). */
  delayMs = 0;
  private server?: SMTPServer;

  private constructor(readonly port: number) {}

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  static async start(options: { mode?: SinkMode; delayMs?: number } = {}): Promise<SmtpSink> {
    const server = await listen(0);
    const sink = new SmtpSink((server.server.address() as AddressInfo).port);
    sink.mode = options.mode ?? 'accept';
    sink.delayMs = options.delayMs ?? 0;
    sink.attach(server);
    return sink;
  }

  /** Listens again, on the same port, after stop(): the mail server is back. */
  async restart(): Promise<void> {
    this.attach(await listen(this.port));
  }

  /** The mails sent to `address`, oldest first. */
  to(address: string): CapturedMail[] {
    return this.mails.filter((mail) => mail.to.includes(address));
  }

  /** Stops listening and drops the connections still open (a stalled one too): the mail server is down. */
  stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }

  private attach(server: SMTPServer): void {
    this.server = server;
    owners.set(server, this);
  }

  /** Called by the server for each message received in full. */
  receive(raw: string, rcptTo: string[], accept: (err?: Error) => void): void {
    if (this.mode === 'stall') {
      this.stalled += 1;
      return; // never answered
    }
    const keep = () => {
      const subject = /^Subject: (.*)$/m.exec(raw)?.[1]?.trim() ?? '';
      this.mails.push({ to: rcptTo, raw, subject, text: part(raw, 'text/plain'), html: part(raw, 'text/html') });
      accept();
    };
    if (this.delayMs > 0) setTimeout(keep, this.delayMs);
    else keep();
  }
}

/** Which sink a server answers for (its handlers are made before the sink knows its port). */
const owners = new WeakMap<SMTPServer, SmtpSink>();

/** A listening server on `port` (0: a free one) whose messages go to the sink attached to it. */
async function listen(port: number): Promise<SMTPServer> {
  const server: SMTPServer = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    // Stopping closes open connections after this, rather than smtp-server's 30 s.
    closeTimeout: 100,
    onRcptTo(address, _session, callback) {
      if (owners.get(server)?.mode === 'reject') {
        const refused = Object.assign(new Error(`5.1.1 <${address.address}>: Recipient address rejected: no such mailbox`), { responseCode: 550 });
        callback(refused);
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const sink = owners.get(server);
        const raw = Buffer.concat(chunks).toString('utf8');
        if (!sink) return callback();
        sink.receive(
          raw,
          session.envelope.rcptTo.map((r) => r.address),
          (err) => callback(err),
        );
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  return server;
}
