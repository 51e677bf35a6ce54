import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServerTimeWitness } from '../api-client/api-client.js';

/**
 * Beside the session file, not in it: the session file has exactly the fields of the contract
 * (seed §2.4, a strict schema), and an older prospect would call a session with one more field
 * invalid. The offset is no credential, so a logout leaves it.
 */
export const CLOCK_FILE_NAME = 'auth-session.clock.json';

/**
 * A new measurement is saved only when it moved this much from the saved one: `Date` has whole
 * seconds, so two measurements of the same clock differ by up to a second, and a machine whose
 * clock is right never writes the file at all.
 */
const SAVE_WHEN_MOVED_MS = 2_000;
/** Backends remembered (the most recently measured): a person uses one or two. */
const MAX_SERVERS = 8;

interface Measurement {
  offsetMs: number;
  measuredAt: string;
}

/**
 * The server's clock as this machine sees it: the offset between the two, measured from the
 * `Date` header of every answer of the API (RFC 9110 §6.6.1) and kept per backend in
 * `auth-session.clock.json`. An expiry the server set (`expiresAt`) is judged by the server's
 * time, never by this machine's clock alone, which may be minutes or hours off.
 *
 * Best effort by design: a file that cannot be read or written is an offset of 0 (this
 * machine's clock), and the server's own word (a 401 "token expired") still decides.
 */
export class ServerClock implements ServerTimeWitness {
  private saved?: Promise<Record<string, Measurement>>;
  /** Measured in this run: the newest word, ahead of the file. */
  private readonly measured = new Map<string, number>();

  constructor(
    readonly dir: string,
    /** This machine's clock (a test hands in a fake one). */
    readonly localNow: () => number = Date.now,
  ) {}

  get path(): string {
    return join(this.dir, CLOCK_FILE_NAME);
  }

  /** The server's time now, in ms since the epoch: this machine's clock plus the offset last measured against `apiBaseUrl` (none yet: 0). */
  async now(apiBaseUrl: string): Promise<number> {
    return this.localNow() + (await this.offsetMs(apiBaseUrl));
  }

  /** How far the server's clock is ahead of this machine's (negative: behind). */
  async offsetMs(apiBaseUrl: string): Promise<number> {
    return this.measured.get(apiBaseUrl) ?? (await this.load())[apiBaseUrl]?.offsetMs ?? 0;
  }

  /**
   * One answer of `apiBaseUrl`, sent at `sentAt` and received at `receivedAt` (this machine's
   * clock). The server stamped `Date` while answering, between the two, in whole seconds (so
   * half a second is added); a cache's `Age` is added too. Never throws.
   */
  async observe(apiBaseUrl: string, headers: Headers, sentAt: number, receivedAt: number): Promise<void> {
    const date = Date.parse(headers.get('date') ?? '');
    if (Number.isNaN(date)) return;
    const age = Number(headers.get('age') ?? 0);
    const serverTime = date + (Number.isFinite(age) && age > 0 ? age * 1000 : 0) + 500;
    const offsetMs = Math.round(serverTime - (sentAt + receivedAt) / 2);
    this.measured.set(apiBaseUrl, offsetMs);
    const saved = await this.load();
    if (Math.abs(offsetMs - (saved[apiBaseUrl]?.offsetMs ?? 0)) < SAVE_WHEN_MOVED_MS) return;
    await this.save(apiBaseUrl, { offsetMs, measuredAt: new Date(this.localNow()).toISOString() });
  }

  private load(): Promise<Record<string, Measurement>> {
    this.saved ??= readFile(this.path, 'utf8').then(
      (text) => parseMeasurements(text),
      () => ({}),
    );
    return this.saved;
  }

  /**
   * Temp file and rename, as the session file: a reader sees the old or the new offsets, never
   * half. No lock: each writer writes a true measurement, and the last one wins. The directory
   * is never created for it (a PROSPECT_TOKEN run in CI has none); any failure is ignored.
   */
  private async save(apiBaseUrl: string, measurement: Measurement): Promise<void> {
    const servers = { ...(await this.load()), [apiBaseUrl]: measurement };
    const kept = Object.fromEntries(
      Object.entries(servers)
        .sort(([, a], [, b]) => Date.parse(b.measuredAt) - Date.parse(a.measuredAt))
        .slice(0, MAX_SERVERS),
    );
    this.saved = Promise.resolve(kept);
    const temp = join(this.dir, `.${CLOCK_FILE_NAME}.${process.pid}.${Math.random().toString(36).slice(2, 10)}.tmp`);
    try {
      await writeFile(temp, `${JSON.stringify({ servers: kept }, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
      await rename(temp, this.path);
    } catch {
      await rm(temp, { force: true }).catch(() => undefined);
    }
  }
}

/** Whatever the file holds, only well-formed measurements come out. */
function parseMeasurements(text: string): Record<string, Measurement> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return {};
  }
  const servers = (json as { servers?: unknown } | null)?.servers;
  if (typeof servers !== 'object' || servers === null) return {};
  const valid: Array<[string, Measurement]> = [];
  for (const [url, value] of Object.entries(servers)) {
    const { offsetMs, measuredAt } = (value ?? {}) as Partial<Measurement>;
    if (typeof offsetMs === 'number' && Number.isFinite(offsetMs) && typeof measuredAt === 'string' && !Number.isNaN(Date.parse(measuredAt))) {
      valid.push([url, { offsetMs, measuredAt }]);
    }
  }
  // fromEntries, not assignment: a key named __proto__ stays a key.
  return Object.fromEntries(valid);
}
