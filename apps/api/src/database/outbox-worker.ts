import { Logger } from '@nestjs/common';
import { type DatabaseAvailability, isDatabaseUnavailable } from './database-availability.js';

/**
 * The background loops that work through a table on every replica: the mail outbox's worker
 * (mail/), the webhook dispatcher and sender (webhooks/). One place for what they share, so their
 * claims, naps, wake-ups and shutdown cannot drift apart: a PollingLoop for the loop itself, an
 * OutboxWorker for a loop that claims rows and works on several at once, and retryDelaySeconds
 * for the backoff of a failed try.
 */

/** Says what went wrong in a loop: a database that is away once through DatabaseAvailability (it logs the outage once), anything else as a warning. */
function reporter(logger: Logger, availability: DatabaseAvailability) {
  return (what: string, err: unknown): void => {
    if (isDatabaseUnavailable(err)) availability.report(err);
    else logger.warn(`could not ${what}: ${(err as Error).message}`);
  };
}

export interface PollingLoopOptions {
  /** The logger's context ('MailOutbox', 'Webhooks'). */
  name: string;
  /** How long it naps when a turn found nothing to do and nothing woke it (another replica's rows, a retry coming due). */
  pollMs: number;
  /** One turn; true to take the next at once (there may be more), false to nap first. */
  turn: () => Promise<boolean>;
  /** What a turn does, for the line that says it failed ("dispatch events to webhooks"). */
  what: string;
  availability: DatabaseAvailability;
}

/**
 * A loop of turns, each followed by a nap of `pollMs` unless it asks to go on or something woke
 * it meanwhile (a row of this replica just committed: wake()). A turn that throws is reported and
 * napped after. Started once the application serves; stop() ends it after the turn under way.
 */
export class PollingLoop {
  private readonly report: (what: string, err: unknown) => void;
  private running?: Promise<void>;
  private stopping = false;
  private wakeUp?: () => void;
  /** A wake-up during a turn is for that turn's nap: it is skipped. */
  private wokenMeanwhile = false;

  constructor(private readonly options: PollingLoopOptions) {
    this.report = reporter(new Logger(options.name), options.availability);
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Whether stop() was called: no new turn starts. */
  get stopped(): boolean {
    return this.stopping;
  }

  /** Takes the next turn now instead of after the nap. */
  wake(): void {
    this.wokenMeanwhile = true;
    this.wakeUp?.();
  }

  /** No new turn; resolves once the turn under way (if any) has ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.running;
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      this.wokenMeanwhile = false;
      let again = false;
      try {
        again = await this.options.turn();
      } catch (err) {
        this.report(this.options.what, err);
      }
      if (!again) await this.nap();
    }
  }

  private nap(): Promise<void> {
    if (this.wokenMeanwhile || this.stopping) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.options.pollMs);
      this.wakeUp = done;
    });
  }
}

/** A row an OutboxWorker claimed: its id and its claim (a later claim of the row, after this one expired, has another `claimedUntil`). */
export interface ClaimedRow {
  id: string;
  claimedUntil: Date;
}

export interface OutboxWorkerOptions<Row extends ClaimedRow> {
  /** The logger's context ('MailOutbox', 'Webhooks'). */
  name: string;
  /** What the rows are, for log lines ('mail', 'deliveries'). */
  rows: string;
  pollMs: number;
  /** Rows one replica works on at once. */
  concurrency: number;
  /**
   * Claims up to `limit` due rows for a lease longer than any try may take, in one statement
   * (`FOR UPDATE SKIP LOCKED`): two replicas never hold one row, and a row whose lease expired
   * (its replica died) is due again.
   */
  claim: (limit: number) => Promise<Row[]>;
  /** One try of one claimed row, its outcome recorded under its claim. It reports its own failures (it should not throw). */
  work: (row: Row) => Promise<void>;
  /** Gives back, with `reason`, the claims of rows abandoned at shutdown: due at once for the next replica. */
  release: (ids: string[], claimedUntil: Date, reason: string) => Promise<void>;
  /**
   * Look for due rows after every finished try (a delivery's end makes its endpoint's next one
   * due), rather than only when every place was taken and one frees up (mail: the poll finds the rest).
   */
  claimAfterEachTry?: boolean;
  availability: DatabaseAvailability;
}

/** How long giving claims back at shutdown may take: past it, they expire by themselves. */
const RELEASE_WAIT_MS = 500;
/** What a row abandoned at shutdown says (its last error), for the admin. */
const ABANDONED = 'not answered before the replica stopped; sent again by the next one';

/**
 * A durable outbox's worker, on every replica: it claims due rows (`concurrency` at a time), works
 * on each, and wakes when a row of this replica commits; it polls for the rest. Delivery is at least
 * once: a replica that dies after the far end accepted and before the outcome was recorded leaves
 * a claim that expires, and another replica tries the row again.
 *
 * Shutdown: stop(exitBy) (main.ts at SIGTERM, or the shutdown hook) claims nothing more; tries
 * under way may finish until a moment before `exitBy`, then they are abandoned (their outcome, when
 * it comes, is not to be recorded: isAbandoned) and their claims given back for the next replica.
 */
export class OutboxWorker<Row extends ClaimedRow> {
  private readonly logger: Logger;
  /** Says that it could not do `what`: a database that is away once (DatabaseAvailability), anything else as a warning. */
  readonly report: (what: string, err: unknown) => void;
  private readonly loop: PollingLoop;
  private readonly inFlight = new Map<string, { row: Row; done: Promise<void> }>();
  private readonly abandoned = new Set<string>();
  private abandonAt = Infinity;
  private isClosed = false;

  constructor(private readonly options: OutboxWorkerOptions<Row>) {
    this.logger = new Logger(options.name);
    this.report = reporter(this.logger, options.availability);
    this.loop = new PollingLoop({ name: options.name, pollMs: options.pollMs, availability: options.availability, what: `claim due ${options.rows}`, turn: () => this.claimFree() });
  }

  start(): void {
    this.loop.start();
  }

  /** Looks for due rows now (one was just committed) instead of at the next poll. */
  wake(): void {
    this.loop.wake();
  }

  /** No new claim from now on; tries under way may go on until shortly before `exitBy` (a Date.now() value). */
  stop(exitBy: number): void {
    if (this.loop.stopped) return;
    // The margin leaves the rest of the shutdown (the pool, the log) its time before exitBy.
    this.abandonAt = exitBy - Math.min(1_000, Math.max(0, exitBy - Date.now()) / 2);
    void this.loop.stop();
  }

  /**
   * Before the pool closes (the shutdown hook): stops, waits for the tries under way until
   * abandonAt, then gives back the claims of the rest. Nothing is claimed or recorded after it.
   */
  async shutdown(exitBy: number): Promise<void> {
    this.stop(exitBy);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, this.abandonAt - Date.now()))));
    await Promise.race([this.finished(), deadline]);
    clearTimeout(timer);
    const unfinished = [...this.inFlight.values()].map((entry) => entry.row);
    if (unfinished.length) {
      this.logger.warn(`${unfinished.length} ${this.options.rows} still being sent at shutdown: left to the next replica (${unfinished.map((row) => row.id).join(', ')})`);
      for (const row of unfinished) this.abandoned.add(row.id);
      await withTimeout(this.releaseClaims(unfinished), RELEASE_WAIT_MS);
    }
    this.isClosed = true;
  }

  /** Whether this row's try was abandoned at shutdown: its claim was given back, its outcome is not to be recorded. */
  isAbandoned(id: string): boolean {
    return this.abandoned.has(id);
  }

  /** After the shutdown: the pool is closing, nothing more is started or written. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** One turn of the loop: as many due rows as there are free places; true when it filled them all (there may be more). */
  private async claimFree(): Promise<boolean> {
    const free = this.options.concurrency - this.inFlight.size;
    if (free <= 0) return false;
    let claimed: Row[] = [];
    try {
      claimed = await this.options.claim(free);
    } catch (err) {
      this.report(`claim due ${this.options.rows}`, err);
    }
    for (const row of claimed) this.begin(row);
    return claimed.length === free;
  }

  private begin(row: Row): void {
    if (this.isClosed) return; // claimed as the pool closed: the claim expires, and another replica takes it
    const done = this.options.work(row).finally(() => {
      const wasFull = this.inFlight.size === this.options.concurrency;
      this.inFlight.delete(row.id);
      if (wasFull || this.options.claimAfterEachTry) this.wake();
    });
    this.inFlight.set(row.id, { row, done });
  }

  /** Resolves when the loop has ended and no try is under way. */
  private async finished(): Promise<void> {
    await this.loop.stop();
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight.values()].map((entry) => entry.done));
  }

  private async releaseClaims(rows: Row[]): Promise<void> {
    const byClaim = new Map<number, Row[]>();
    for (const row of rows) byClaim.set(row.claimedUntil.getTime(), [...(byClaim.get(row.claimedUntil.getTime()) ?? []), row]);
    try {
      for (const [claimedUntil, claim] of byClaim) await this.options.release(claim.map((row) => row.id), new Date(claimedUntil), ABANDONED);
    } catch (err) {
      this.report(`give back the claims of unfinished ${this.options.rows} (they expire by themselves)`, err);
    }
  }
}

/**
 * The wait before the next try: `baseSeconds` after the first failure, doubling with each one, at
 * most `maxSeconds`, plus up to `jitter` of it at random (0.1: up to 10 % more), which spreads the
 * retries of many rows that failed together (an endpoint back up) instead of sending them at once.
 */
export function retryDelaySeconds(baseSeconds: number, failures: number, maxSeconds: number, jitter = 0): number {
  const doubled = Math.min(maxSeconds, baseSeconds * 2 ** Math.min(Math.max(0, failures - 1), 20));
  return doubled * (1 + Math.random() * jitter);
}

/** Waits for `promise` at most `ms`. */
async function withTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
