import connectPgSimple from 'connect-pg-simple';
import session, { type SessionData } from 'express-session';
import { sha256 } from '../common/secrets.js';

const PGStore = connectPgSimple(session);

/** What the table stores instead of a session id: its SHA-256, base64url. */
export const hashSessionId = (sid: string) => sha256(sid).toString('base64url');

/**
 * connect-pg-simple, keeping only the SHA-256 of each session id, as we do for
 * every other bearer secret: someone who reads the table (a backup, a replica)
 * learns no cookie that would sign them in. The four calls that take an id
 * hash it; everything else is the library's.
 */
export class HashedSessionStore extends PGStore {
  override get(sid: string, callback: (err: unknown, session?: SessionData | null) => void): void {
    super.get(hashSessionId(sid), callback);
  }

  override set(sid: string, data: SessionData, callback?: (err?: unknown) => void): void {
    super.set(hashSessionId(sid), data, callback);
  }

  override touch(sid: string, data: SessionData, callback?: () => void): void {
    super.touch(hashSessionId(sid), data, callback);
  }

  override destroy(sid: string, callback?: (err?: unknown) => void): void {
    super.destroy(hashSessionId(sid), callback);
  }
}
