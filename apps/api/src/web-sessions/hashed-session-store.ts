import connectPgSimple from 'connect-pg-simple';
import type { Request } from 'express';
import session, { type Session, type SessionData } from 'express-session';
import { sha256 } from '../common/secrets.js';

const PGStore = connectPgSimple(session);

/** What the table stores instead of a session id: its SHA-256, base64url. */
export const hashSessionId = (sid: string) => sha256(sid).toString('base64url');

/**
 * What each session object of a request last wrote, so that the same content is not written
 * twice. A sign-in regenerates the session and saves it before its redirect (passport,
 * regenerateSession + saveSession); express-session then saves it once more when the response
 * ends, because the id changed, and it sends the redirect's headers before that save. The browser
 * follows at once, and the next page may change the session (its CSRF token, a notice); the late
 * second write of the sign-in's unchanged session then landed after it and undid the change (a
 * form refused as forged under load). Skipping a write of unchanged content removes that writer.
 * The cookie's expiry is left out of the comparison: it moves with every save.
 */
const lastWritten = new WeakMap<SessionData, string>();

const contentOf = (sid: string, data: SessionData) => JSON.stringify({ ...data, cookie: undefined, sid });

/**
 * The sessions a request read from the table (express-session inflates each through
 * createSession), as opposed to one it made (a first visit, a sign-in's regenerate). A session
 * read from the table is written back only while its row is still there: ending a session (sign
 * out everywhere, an identity provider disabled, a link refused, an account disabled) deletes the
 * row, and a request of that session under way at that moment must not store it again when it
 * ends. Its write is an UPDATE, never the library's upsert.
 */
const readFromTable = new WeakSet<object>();

/**
 * connect-pg-simple, keeping only the SHA-256 of each session id, as we do for
 * every other bearer secret: someone who reads the table (a backup, a replica)
 * learns no cookie that would sign them in. The four calls that take an id
 * hash it; everything else is the library's, but for a repeated write and the write-back of a
 * session read from the table (above).
 */
export class HashedSessionStore extends PGStore {
  /** @param writeBack the write of a session read from the table (WebSessionsRepository.writeBack). */
  constructor(
    options: ConstructorParameters<typeof PGStore>[0],
    private readonly writeBack: (sidHash: string, sess: SessionData, expire: Date) => Promise<unknown>,
  ) {
    super(options);
  }

  override get(sid: string, callback: (err: unknown, session?: SessionData | null) => void): void {
    super.get(hashSessionId(sid), callback);
  }

  override createSession(req: Request, data: SessionData): Session & SessionData {
    const created = super.createSession(req, data);
    readFromTable.add(created);
    return created;
  }

  override set(sid: string, data: SessionData, callback?: (err?: unknown) => void): void {
    const content = contentOf(sid, data);
    if (lastWritten.get(data) === content) return void process.nextTick(() => callback?.());
    const done = (err?: unknown) => {
      if (!err) lastWritten.set(data, content);
      callback?.(err);
    };
    const expires = data.cookie?.expires;
    if (!readFromTable.has(data) || !expires) return super.set(hashSessionId(sid), data, done);
    // An ended session stays ended: nothing is updated, and nothing inserted.
    this.writeBack(hashSessionId(sid), data, new Date(expires)).then(() => done(), done);
  }

  override touch(sid: string, data: SessionData, callback?: () => void): void {
    super.touch(hashSessionId(sid), data, callback);
  }

  override destroy(sid: string, callback?: (err?: unknown) => void): void {
    super.destroy(hashSessionId(sid), callback);
  }
}
