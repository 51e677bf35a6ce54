import { Global, Module, type OnModuleInit } from '@nestjs/common';
import { Metrics } from '../metrics/metrics.js';
import { MailOutboxRepository } from './mail-outbox.repository.js';
import { MailQueue } from './mail-queue.js';
import { MailTransport } from './mail-transport.js';
import { MailWorker } from './mail-worker.js';
import { Mailer } from './mailer.js';

/** How long a scrape waits for the outbox's age before it answers with the last one. */
const AGE_READ_MS = 1_000;

/**
 * Outbound mail, for whichever feature writes to people (password reset, …): the outbox
 * (Mailer queues, MailWorker sends), its admin view (MailQueue), and its rows for retention.
 */
@Global()
@Module({
  providers: [Mailer, MailWorker, MailTransport, MailOutboxRepository, MailQueue],
  exports: [Mailer, MailWorker, MailQueue],
})
export class MailModule implements OnModuleInit {
  constructor(
    private readonly metrics: Metrics,
    private readonly outbox: MailOutboxRepository,
  ) {}

  onModuleInit(): void {
    this.metrics.mailQueueAge(
      () =>
        new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('the outbox did not answer in time')), AGE_READ_MS);
          this.outbox.oldestWaitingSeconds().then(resolve, reject).finally(() => clearTimeout(timer));
        }),
    );
  }
}
