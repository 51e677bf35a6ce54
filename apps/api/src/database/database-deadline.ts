import { performance } from 'node:perf_hooks';

/**
 * A request's budget for the database ran out before the database answered: a database that
 * cannot serve now, answered 503 with Retry-After like any other (isDatabaseUnavailable).
 */
export class DatabaseDeadlineExceeded extends Error {
  override readonly name = 'DatabaseDeadlineExceeded';

  constructor() {
    super("no answer from the database within the request's DATABASE_TIMEOUT_MS");
  }
}

/**
 * One request's whole budget for the database: DATABASE_TIMEOUT_MS from when the request began,
 * however many waits it is spent on (a rate limit's claim shared with other requests, then the
 * request's own statements). Each wait is cut at the deadline instead of getting a full
 * DATABASE_TIMEOUT_MS of its own, so the request answers within DATABASE_TIMEOUT_MS (issue #32:
 * a device start waited behind the limiter's claim in flight, then for its own claim, then for its
 * insert, up to three timeouts in a row).
 *
 * A statement cut short is not cancelled: it ends by its own limit (`query_timeout`, on a connection
 * then thrown away; `statement_timeout` on the server). On a database that was frozen and comes
 * back it may still be carried out after its request answered 503, as it may whenever a client
 * gives up on a statement it sent; the callers' writes are the kind a client may repeat (a started
 * device login nobody polls expires).
 *
 * Measured on the monotonic clock: a fake Clock (tests) or a stepped wall clock changes no deadline.
 */
export class DatabaseDeadline {
  private constructor(private readonly at: number) {}

  /** The deadline `budgetMs` from now (Infinity: none). */
  static after(budgetMs: number): DatabaseDeadline {
    return new DatabaseDeadline(performance.now() + budgetMs);
  }

  get remainingMs(): number {
    return this.at - performance.now();
  }

  get passed(): boolean {
    return this.remainingMs <= 0;
  }

  /**
   * Calls `onPassed` once the deadline passes, unless the returned function is called first (the
   * wait ended in time). Called at once (synchronously) when it has passed already.
   */
  whenPassed(onPassed: () => void): () => void {
    const remaining = this.remainingMs;
    if (remaining <= 0) {
      onPassed();
      return () => undefined;
    }
    if (remaining === Number.POSITIVE_INFINITY) return () => undefined;
    const timer = setTimeout(onPassed, remaining);
    return () => clearTimeout(timer);
  }

  /**
   * What `work` resolves or rejects with, or DatabaseDeadlineExceeded at the deadline if it has not
   * settled by then (its late outcome is dropped: the request has answered). Not started at all once
   * the deadline has passed.
   */
  within<T>(work: () => Promise<T>): Promise<T> {
    if (this.passed) return Promise.reject(new DatabaseDeadlineExceeded());
    return new Promise<T>((resolve, reject) => {
      const stop = this.whenPassed(() => reject(new DatabaseDeadlineExceeded()));
      Promise.resolve()
        .then(work)
        .then(
          (value) => {
            stop();
            resolve(value);
          },
          (err: unknown) => {
            stop();
            reject(err);
          },
        );
    });
  }
}
