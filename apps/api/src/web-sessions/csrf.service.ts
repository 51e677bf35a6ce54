import { createHmac, randomBytes } from 'node:crypto';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import { csrfSync } from 'csrf-sync';
import type { Request } from 'express';
import { constantTimeEqual } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';
import { readCookie } from './request-cookies.js';

/** Marks a form token of the anonymous kind (below), so the two kinds are never compared with each other. */
const ANONYMOUS = 'a.';

declare module 'express-serve-static-core' {
  interface Request {
    /** The anonymous CSRF cookie's value set during this request (read back by a second form on the same page). */
    csrfCookie?: string;
  }
}

/**
 * CSRF tokens for every form, of two kinds:
 * - A session that is kept (signed in, half signed in, or one that has a token already): a
 *   synchroniser token (csrf-sync), one random token per session, kept in the session, echoed in
 *   every form as `_csrf` (or sent as `x-csrf-token` by scripts). A session renewed at sign-in
 *   gets a new token.
 * - A visitor with no session (the sign-in, sign-up and mailed-link pages): a signed double-submit
 *   cookie (OWASP), so that showing a form stores nothing: a random cookie, and in the form its
 *   HMAC under a server key. Every cookieless `GET /login` used to store a session row for a week
 *   (issue #31). Accepted only where no session is signed in: a signed-in person's forms must
 *   carry their session's own token.
 */
@Injectable()
export class CsrfService implements OnModuleInit {
  private readonly csrf = csrfSync({
    size: 32,
    getTokenFromRequest: (req) => {
      const fromForm = (req.body as Record<string, unknown> | undefined)?._csrf;
      const fromHeader = req.headers['x-csrf-token'];
      return typeof fromForm === 'string' ? fromForm : typeof fromHeader === 'string' ? fromHeader : undefined;
    },
  });
  private key = '';

  constructor(
    private readonly config: AppConfig,
    private readonly secrets: ServerSecrets,
  ) {}

  async onModuleInit(): Promise<void> {
    this.key = await this.secrets.get('csrf-cookie');
  }

  /** `__Host-` on https: the cookie is then only ever this site's, on every path. */
  get cookieName(): string {
    return this.config.secureCookies ? '__Host-prospect_csrf' : 'prospect_csrf';
  }

  /** The token for this request's forms (see the kinds above). */
  tokenFor(req: Request): string {
    if (this.keepsSession(req) || req.session?.csrfToken) return this.csrf.generateToken(req);
    let cookie = req.csrfCookie ?? readCookie(req, this.cookieName);
    if (!cookie || !/^[A-Za-z0-9_-]{43}$/.test(cookie)) {
      cookie = randomBytes(32).toString('base64url');
      req.res!.cookie(this.cookieName, cookie, { httpOnly: true, secure: this.config.secureCookies, sameSite: 'lax', path: '/' });
    }
    req.csrfCookie = cookie;
    return ANONYMOUS + this.sign(cookie);
  }

  /**
   * Whether the request carries this session's token, or, with no session signed in, the
   * anonymous one that matches its cookie. csrf-sync's own `isRequestValid` compares with `===`;
   * the design compares secrets in constant time, so the comparisons are ours.
   */
  isValid(req: Request): boolean {
    if (!req.session) return false;
    const sent = this.csrf.getTokenFromRequest(req);
    if (typeof sent !== 'string') return false;
    if (sent.startsWith(ANONYMOUS)) {
      const cookie = readCookie(req, this.cookieName);
      return !this.keepsSession(req) && cookie !== null && constantTimeEqual(Buffer.from(sent), Buffer.from(ANONYMOUS + this.sign(cookie)));
    }
    const kept = this.csrf.getTokenFromState(req);
    return typeof kept === 'string' && constantTimeEqual(Buffer.from(sent), Buffer.from(kept));
  }

  /** A session worth its row: someone is signed in, or half signed in. */
  private keepsSession(req: Request): boolean {
    return req.webUser !== undefined || req.session?.pendingSignIn !== undefined;
  }

  private sign(cookie: string): string {
    return createHmac('sha256', this.key).update(cookie).digest('base64url');
  }
}
