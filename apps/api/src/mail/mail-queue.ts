import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { MailOutboxRepository } from './mail-outbox.repository.js';
import { maskAddress, maskAddressesIn } from './mask-address.js';

/** Given-up mails the admin view lists. */
export const GIVEN_UP_SHOWN = 20;

/**
 * The outbox as an administrator sees it (GET /api/admin/mail). Addresses are masked
 * (`j***@example.com`), in the reasons too: the view is for the queue's health, not for reading
 * whom the service writes to. A schema of the API only: the CLI does not read it.
 */
export const MailQueueStateSchema = z.object({
  /** Mails by state: waiting (to be tried, now or after a failed try), sending (claimed by a replica now), sent (kept a few days), given up (kept 30 days). */
  counts: z.object({ waiting: z.int(), sending: z.int(), sent: z.int(), givenUp: z.int() }),
  /** The unfinished mail queued first, or null when none waits. */
  oldestWaiting: z
    .object({
      id: z.string(),
      to: z.string(),
      subject: z.string(),
      queuedAt: z.iso.datetime(),
      ageSeconds: z.number(),
      attempts: z.int(),
      nextAttemptAt: z.iso.datetime(),
      lastError: z.string().nullable(),
    })
    .nullable(),
  /** The last mails given up, latest first, each with the reason. */
  givenUp: z.array(
    z.object({
      id: z.string(),
      to: z.string(),
      subject: z.string(),
      queuedAt: z.iso.datetime(),
      givenUpAt: z.iso.datetime(),
      attempts: z.int(),
      reason: z.string().nullable(),
    }),
  ),
});
export type MailQueueState = z.infer<typeof MailQueueStateSchema>;

@Injectable()
export class MailQueue {
  constructor(private readonly outbox: MailOutboxRepository) {}

  async state(): Promise<MailQueueState> {
    const [counts, oldest, givenUp] = await Promise.all([this.outbox.counts(), this.outbox.oldestWaiting(), this.outbox.lastGivenUp(GIVEN_UP_SHOWN)]);
    return {
      counts,
      oldestWaiting: oldest
        ? {
            id: oldest.id,
            to: maskAddress(oldest.to),
            subject: oldest.subject,
            queuedAt: oldest.createdAt.toISOString(),
            ageSeconds: Math.round(oldest.ageSeconds),
            attempts: oldest.attempts,
            nextAttemptAt: oldest.nextAttemptAt.toISOString(),
            lastError: oldest.lastError === null ? null : maskAddressesIn(oldest.lastError),
          }
        : null,
      givenUp: givenUp.map((mail) => ({
        id: mail.id,
        to: maskAddress(mail.to),
        subject: mail.subject,
        queuedAt: mail.createdAt.toISOString(),
        givenUpAt: mail.givenUpAt.toISOString(),
        attempts: mail.attempts,
        reason: mail.reason === null ? null : maskAddressesIn(mail.reason),
      })),
    };
  }
}
