/** Which Postgres the app talks to; set once at startup. */
export class DatabaseInfo {
  constructor(
    readonly url: string,
    /** The embedded PGlite: a single process, no LISTEN/NOTIFY across connections. */
    readonly embedded: boolean,
  ) {}
}

/** What the database layer is told by the configuration. */
export interface DatabaseSettings {
  /** The most any wait on the database may take, in ms (DATABASE_TIMEOUT_MS). */
  timeoutMs: number;
  /** Apply pending migrations at start (MIGRATE_ON_START); else refuse to start while any is pending. */
  migrateOnStart: boolean;
}

/** Provided by the configuration module, so database/ needs to know nothing of how settings are read. */
export const DATABASE_SETTINGS = Symbol('DATABASE_SETTINGS');
