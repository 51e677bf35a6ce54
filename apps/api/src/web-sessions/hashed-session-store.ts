import connectPgSimple from 'connect-pg-simple';
import session, { type SessionData } from 'express-session';
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
 * connect-pg-simple, keeping only the SHA-256 of each session id, as we do for
 * every other bearer secret: someone who reads the table (a backup, a replica)
 * learns no cookie that would sign them in. The four calls that take an id
 * hash it; everything else is the library's, but for a repeated write (above).
 */
export class HashedSessionStore extends PGStore {
  override get(sid: string, callback: (err: unknown, session?: SessionData | null) => void): void {
    super.get(hashSessionId(sid), callback);
  }

  override set(sid: string, data: SessionData, callback?: (err?: unknown) => void): void {
    const content = contentOf(sid, data);
    if (lastWritten.get(data) === content) return void process.nextTick(() => callback?.());
    super.set(hashSessionId(sid), data, (err?: unknown) => {
      if (!err) lastWritten.set(data, content);
      callback?.(err);
    });
  }

  override touch(sid: string, data: SessionData, callback?: () => void): void {
    super.touch(hashSessionId(sid), data, callback);
  }

  override destroy(sid: string, callback?: (err?: unknown) => void): void {
    super.destroy(hashSessionId(sid), callback);
  }
}
