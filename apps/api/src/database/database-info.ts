/** Which Postgres the app talks to, and how; set once at startup. */
export class DatabaseInfo {
  /**
   * The server itself, for what needs a session of its own: the revocation listener's LISTEN
   * and the migrations' advisory lock. DATABASE_DIRECT_URL when DATABASE_URL leads to a
   * transaction pooler (PgBouncer), else `url`.
   */
  readonly directUrl: string;
  /** Named prepared statements on the pool: not on the embedded database, nor with DATABASE_PREPARED_STATEMENTS=false. */
  readonly preparedStatements: boolean;

  constructor(
    /** What the pool connects to: the server, or a pooler in front of it. */
    readonly url: string,
    /** The embedded PGlite: a single process, no LISTEN/NOTIFY across connections. */
    readonly embedded: boolean,
    options: { directUrl?: string; preparedStatements?: boolean } = {},
  ) {
    this.directUrl = options.directUrl ?? url;
    this.preparedStatements = !embedded && (options.preparedStatements ?? true);
  }

  /** DATABASE_URL leads to a transaction pooler: a connection of the pool is not a session of its own. */
  get behindPooler(): boolean {
    return this.directUrl !== this.url;
  }
}

/** What the database layer is told by the configuration. */
export interface DatabaseSettings {
  /** The most any wait on the database may take, in ms (DATABASE_TIMEOUT_MS). */
  timeoutMs: number;
  /** Apply pending migrations at start (MIGRATE_ON_START); else refuse to start while any is pending. */
  migrateOnStart: boolean;
  /** DATABASE_DIRECT_URL: the server behind the pooler DATABASE_URL leads to. */
  directUrl?: string;
  /** DATABASE_PREPARED_STATEMENTS. */
  preparedStatements: boolean;
}

/** Provided by the configuration module, so database/ needs to know nothing of how settings are read. */
export const DATABASE_SETTINGS = Symbol('DATABASE_SETTINGS');
