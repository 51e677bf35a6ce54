import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { constantTimeEqual, generateSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import type { UserRole } from '../users/user.entity.js';

export const SESSION_COOKIE = 'prospect_session';
/** Before sign-in there is no session to bind a CSRF token to: a double-submit cookie. */
export const ANON_CSRF_COOKIE = 'prospect_csrf';
const SESSION_TTL_MS = 14 * 24 * 3600 * 1000;

export interface WebSession {
  id: string;
  user: { id: string; email: string; name: string; role: UserRole };
  csrfToken: string;
  expiresAt: Date;
}

/** Server-side web sessions in Postgres; the cookie holds a 256-bit id, the table its SHA-256. */
@Injectable()
export class WebSessionService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  /** @param maxAgeSeconds unset: a browser-session cookie. */
  private cookieOptions(maxAgeSeconds?: number) {
    return { httpOnly: true, sameSite: 'lax' as const, secure: this.config.secureCookies, path: '/', maxAge: maxAgeSeconds };
  }

  async create(userId: string, reply: FastifyReply): Promise<void> {
    const raw = generateSecret('prsw_');
    const now = this.clock.now();
    await this.db.query(
      `INSERT INTO web_sessions (session_hash, user_id, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
      [sha256(raw), userId, randomBytes(32).toString('base64url'), now, new Date(now.getTime() + SESSION_TTL_MS)],
    );
    reply.setCookie(SESSION_COOKIE, raw, this.cookieOptions(SESSION_TTL_MS / 1000));
    reply.clearCookie(ANON_CSRF_COOKIE, this.cookieOptions());
  }

  async resolve(req: FastifyRequest): Promise<WebSession | null> {
    const raw = req.cookies[SESSION_COOKIE];
    if (typeof raw !== 'string' || raw.length > 200) return null;
    const rows = (await this.db.query(
      `SELECT s.id, s.csrf_token, s.expires_at, u.id AS user_id, u.email, u.name, u.role
         FROM web_sessions s JOIN users u ON u.id = s.user_id
        WHERE s.session_hash = $1 AND s.expires_at > $2`,
      [sha256(raw), this.clock.now()],
    )) as Array<Record<string, never>>;
    const row = rows[0];
    if (!row) return null;
    return { id: row.id, user: { id: row.user_id, email: row.email, name: row.name, role: row.role }, csrfToken: row.csrf_token, expiresAt: row.expires_at };
  }

  /** Sign-out deletes the row, not only the cookie. */
  async destroy(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const raw = req.cookies[SESSION_COOKIE];
    if (typeof raw === 'string') await this.db.query(`DELETE FROM web_sessions WHERE session_hash = $1`, [sha256(raw)]);
    reply.clearCookie(SESSION_COOKIE, this.cookieOptions());
  }

  /** The CSRF token for forms shown before sign-in; set as a cookie and echoed in the form. */
  anonymousCsrf(req: FastifyRequest, reply: FastifyReply): string {
    const existing = req.cookies[ANON_CSRF_COOKIE];
    if (typeof existing === 'string' && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
    const token = randomBytes(32).toString('base64url');
    reply.setCookie(ANON_CSRF_COOKIE, token, this.cookieOptions());
    return token;
  }

  checkAnonymousCsrf(req: FastifyRequest, submitted: string): boolean {
    const cookie = req.cookies[ANON_CSRF_COOKIE];
    return typeof cookie === 'string' && sameSecret(cookie, submitted);
  }

  checkCsrf(session: WebSession, submitted: string): boolean {
    return sameSecret(session.csrfToken, submitted);
  }
}

function sameSecret(expected: string, submitted: string): boolean {
  return submitted.length > 0 && constantTimeEqual(Buffer.from(expected), Buffer.from(submitted));
}
