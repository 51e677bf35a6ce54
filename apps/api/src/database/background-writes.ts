import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { DatabaseAvailability, isDatabaseUnavailable } from './database-availability.js';

/**
 * Writes a request does not wait for (last-used times), so the hot path
 * stays a read. Failures are logged (a database that is away is reported to
 * DatabaseAvailability, which says so once), and shutdown waits for the ones
 * in flight before the pool closes.
 */
@Injectable()
export class BackgroundWrites implements BeforeApplicationShutdown {
  private readonly logger = new Logger(BackgroundWrites.name);
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(private readonly availability: DatabaseAvailability) {}

  run(what: string, write: () => Promise<unknown>): void {
    const task = write()
      .catch((err: Error) => (isDatabaseUnavailable(err) ? this.availability.report(err) : this.logger.warn(`could not ${what}: ${err.message}`)))
      .finally(() => this.inFlight.delete(task));
    this.inFlight.add(task);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }
}
