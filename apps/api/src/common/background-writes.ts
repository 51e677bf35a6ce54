import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';

/**
 * Writes a request does not wait for (last-used times), so the hot path
 * stays a read. Failures are logged, and
 * shutdown waits for the ones in flight before the pool closes.
 */
@Injectable()
export class BackgroundWrites implements BeforeApplicationShutdown {
  private readonly logger = new Logger(BackgroundWrites.name);
  private readonly inFlight = new Set<Promise<unknown>>();

  run(what: string, write: () => Promise<unknown>): void {
    const task = write()
      .catch((err: Error) => this.logger.warn(`could not ${what}: ${err.message}`))
      .finally(() => this.inFlight.delete(task));
    this.inFlight.add(task);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }
}
