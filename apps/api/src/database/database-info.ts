/** Which Postgres the app talks to; set once at startup. */
export class DatabaseInfo {
  constructor(
    readonly url: string,
    /** The embedded PGlite: a single process, no LISTEN/NOTIFY across connections. */
    readonly embedded: boolean,
  ) {}
}
