import { type RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { DatabaseDeadline, DatabaseDeadlineExceeded } from '../database/database-deadline.js';

/** A request waiting for a point of its key. */
interface Waiter {
  resolve: () => void;
  reject: (reason: unknown) => void;
  /** Its deadline passed while it waited: it was answered (DatabaseDeadlineExceeded) and takes no point. */
  gaveUp: boolean;
}

/** What this process holds of one key's window. */
interface Lease {
  /** Points claimed from Postgres and not yet handed out. */
  points: number;
  /** When the window of those points ends (ms since the epoch); the points go with it. */
  windowEnd: number;
  /** The shared counter had no point left: refuse here, without asking, until the window ends. */
  refusedUntil: number;
  /** Requests waiting for the claim after the one in flight. */
  waiting: Waiter[];
  claiming: boolean;
}

/** How often keys whose window has ended are forgotten. */
const SWEEP_MS = 10_000;

/**
 * A limit on a hot path (issue #21) whose points are claimed from the shared counter in
 * batches, so requests that share a key neither update its row one by one (a row lock held
 * through every commit serialized them) nor pay a round trip each.
 *
 * - A request takes a point this process already holds, with no round trip.
 * - Otherwise it waits for the next claim, which asks for one point per waiting request plus
 *   `prefetch` more in one atomic upsert (rate-limiter-flexible's, on `rate_limits`). The
 *   points are counted before any work they admit, so across every replica no more than the
 *   limit are ever admitted in a window: hundreds of parallel requests get no more than one
 *   request at a time would.
 * - The error is on the safe side only: points a replica claimed and did not use before the
 *   window ended are lost, so a key is refused after at most `prefetch` × replicas fewer than
 *   the limit. With `prefetch` 0 the count is exact.
 * - Once the shared counter is used up, this process refuses the key until the window ends
 *   without asking Postgres again.
 * - A request waits no longer than its deadline (DatabaseDeadline: its whole budget for the
 *   database, of which the insert after this wait is part too), whether the claim it waits for is
 *   its own or one in flight for others before it: at the deadline it is answered
 *   DatabaseDeadlineExceeded (a 503), and a point later claimed for it goes to the next request.
 *   Without that, on a frozen database a request waited for the claim in flight, then for the next
 *   one, each up to DATABASE_TIMEOUT_MS (issue #32).
 *
 * Hand-written because rate-limiter-flexible has no batched claims: its store limiters update
 * the row on every request, and its memory limiters do not share a count across replicas.
 */
export class LeasedLimiter {
  private readonly leases = new Map<string, Lease>();
  private lastSweep = Date.now();

  /**
   * @param budgetMs a request's budget when it names no deadline of its own (the service's:
   *   DATABASE_TIMEOUT_MS); unset, such a request waits as long as the claims take.
   */
  constructor(
    private readonly store: RateLimiterPostgres,
    readonly prefetch: number,
    private readonly budgetMs = Number.POSITIVE_INFINITY,
  ) {}

  get keyPrefix(): string {
    return this.store.keyPrefix;
  }

  /**
   * Resolves when `key` has a point for this request; rejects with a RateLimiterRes when refused,
   * with DatabaseDeadlineExceeded when `deadline` passes first (any other rejection is the database's).
   */
  consume(key: string, deadline = DatabaseDeadline.after(this.budgetMs)): Promise<void> {
    const now = Date.now();
    this.sweep(now);
    let lease = this.leases.get(key);
    if (!lease) this.leases.set(key, (lease = { points: 0, windowEnd: 0, refusedUntil: 0, waiting: [], claiming: false }));
    if (lease.refusedUntil > now) return Promise.reject(refusal(lease.refusedUntil - now));
    if (lease.points > 0 && lease.windowEnd > now) {
      lease.points--;
      return Promise.resolve();
    }
    if (deadline.passed) return Promise.reject(new DatabaseDeadlineExceeded());
    const waiting = new Promise<void>((resolve, reject) => {
      let stopTimer = () => {};
      const waiter: Waiter = { resolve: () => (stopTimer(), resolve()), reject: (reason) => (stopTimer(), reject(reason)), gaveUp: false };
      lease.waiting.push(waiter);
      stopTimer = deadline.whenPassed(() => {
        waiter.gaveUp = true;
        // Still queued: no claim is made for it. In a claim's batch: the claim hands its point on.
        const queued = lease.waiting.indexOf(waiter);
        if (queued >= 0) lease.waiting.splice(queued, 1);
        reject(new DatabaseDeadlineExceeded());
      });
    });
    if (!lease.claiming && lease.waiting.length) void this.claim(key, lease);
    return waiting;
  }

  /** Claims points for every request waiting on `key` (and `prefetch` more), then hands them out; claims again for whoever came meanwhile. */
  private async claim(key: string, lease: Lease): Promise<void> {
    lease.claiming = true;
    const batch = lease.waiting.splice(0);
    const asked = batch.length + this.prefetch;
    let result: RateLimiterRes;
    try {
      result = await this.store.consume(key, asked);
    } catch (reason) {
      if (!(reason instanceof RateLimiterRes)) {
        for (const waiter of batch) if (!waiter.gaveUp) waiter.reject(reason);
        return this.claimed(key, lease);
      }
      result = reason;
    }
    // The upsert added `asked` to the window's count and returned the sum: the points below the limit are ours.
    const granted = Math.min(asked, Math.max(0, this.store.points - (result.consumedPoints - asked)));
    const windowEnd = Date.now() + result.msBeforeNext;
    // Those whose deadline passed during the claim were answered: their points go to whoever comes next.
    const live = batch.filter((waiter) => !waiter.gaveUp);
    live.slice(0, granted).forEach((waiter) => waiter.resolve());
    live.slice(granted).forEach((waiter) => waiter.reject(refusal(result.msBeforeNext)));
    lease.points = Math.max(0, granted - live.length);
    lease.windowEnd = windowEnd;
    if (granted < asked) lease.refusedUntil = windowEnd;
    this.claimed(key, lease);
  }

  /** After a claim: whoever came meanwhile takes the points left over, is refused with the key, or waits for the next claim. */
  private claimed(key: string, lease: Lease): void {
    lease.claiming = false;
    const now = Date.now();
    if (lease.windowEnd > now) {
      const served = lease.waiting.splice(0, lease.points);
      lease.points -= served.length;
      served.forEach((waiter) => waiter.resolve());
    }
    if (lease.refusedUntil > now) lease.waiting.splice(0).forEach((waiter) => waiter.reject(refusal(lease.refusedUntil - now)));
    else if (lease.waiting.length) void this.claim(key, lease);
  }

  /** Forgets the leases of ended windows, so the map holds only the keys seen in the last window or so. */
  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_MS) return;
    this.lastSweep = now;
    for (const [key, lease] of this.leases) {
      if (!lease.claiming && lease.windowEnd <= now && lease.refusedUntil <= now) this.leases.delete(key);
    }
  }
}

function refusal(msBeforeNext: number): RateLimiterRes {
  return new RateLimiterRes(0, msBeforeNext, 0, false);
}
