/** Which Postgres the app talks to; set once at startup. */
export class DatabaseInfo {
  constructor(
    readonly url: string,
    /** The embedded PGlite: a single process, no LISTEN/NOTIFY across connections. */
    readonly embedded: boolean,
  ) {}
}

/**
 * The most any wait on the database may take, in ms (DATABASE_TIMEOUT_MS): provided by the
 * configuration module, so database/ needs to know nothing of how settings are read.
 */
export const DATABASE_TIMEOUT_MS = Symbol('DATABASE_TIMEOUT_MS');
