import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import session from 'express-session';
import passport from 'passport';
import { Clock } from '../common/clock.js';
import { generateSecret } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { Sql } from '../database/sql.js';
import { HashedSessionStore } from './hashed-session-store.js';
import { WebSessionsRepository } from './web-sessions.repository.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';
import { WEB_USER_PROPERTY } from './web-account.js';
import { recordSignInProof } from './session-proof.js';
import type { Tx } from '../database/tx.js';

/**
 * Browser sessions: express-session with its rows in Postgres (so every replica
 * sees every session), passport on top for who is signed in. One chain of
 * middleware, mounted only on the routes that read a session (web.module.ts):
 * the CLI's API routes never parse a cookie.
 *
 * - The cookie is HttpOnly, SameSite=Lax, `Secure` with the `__Host-` prefix on https.
 * - A session ends after WEB_SESSION_IDLE_SECONDS without a request (the cookie and
 *   the row's expiry roll forward on each one) and WEB_SESSION_MAX_SECONDS after sign-in.
 * - passport regenerates the session id at sign-in and at sign-out.
 */
@Injectable()
export class WebSessions implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(WebSessions.name);
  private store?: HashedSessionStore;
  private chain?: RequestHandler;

  constructor(
    private readonly sql: Sql,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly secrets: ServerSecrets,
    private readonly sessions: WebSessionsRepository,
  ) {}

  get cookieName(): string {
    return this.config.secureCookies ? '__Host-prospect_session' : 'prospect_session';
  }

  async onModuleInit(): Promise<void> {
    this.store = new HashedSessionStore({
      pool: this.sql.pool,
      tableName: 'web_sessions',
      createTableIfMissing: false,
      // Expired rows go with the hourly retention job, on one replica at a time.
      pruneSessionInterval: false,
      errorLog: (...args: unknown[]) => this.logger.warn(`session store: ${args.map(String).join(' ')}`),
    }, (sidHash, sess, expire) => this.sessions.writeBack(sidHash, sess, expire));
    const chain = express.Router();
    chain.use(
      session({
        name: this.cookieName,
        // The session id alone is 256 random bits, but express-session requires a signing key.
        secret: await this.secrets.get('session-cookie'),
        store: this.store,
        genid: () => generateSecret('prsw_'),
        resave: false,
        saveUninitialized: false,
        rolling: true,
        cookie: {
          httpOnly: true,
          sameSite: 'lax',
          secure: this.config.secureCookies,
          path: '/',
          maxAge: this.config.webSessionIdleSeconds * 1000,
        },
      }),
      passport.initialize({ userProperty: WEB_USER_PROPERTY }),
      passport.session(),
      this.endAtAbsoluteLifetime,
    );
    this.chain = chain;
  }

  onApplicationShutdown(): void {
    // The pool is TypeORM's and closes with it.
    this.store?.close();
  }

  /** Ends every browser session of this person, on every device (in `tx` when given); returns how many. */
  endAllFor(userId: string, tx?: Tx): Promise<number> {
    return this.sessions.deleteAllOf(userId, tx);
  }

  /** Ends, in `tx`, the browser sessions started through one identity-provider link (federation/: refused or unlinked); how many. */
  endForFederatedLink(tx: Tx, linkId: string): Promise<number> {
    return this.sessions.deleteOfFederatedLink(tx, linkId);
  }

  /** Ends, in `tx`, every browser session started through a link of this identity provider (federation/: disabled or deleted); how many. */
  endForProvider(tx: Tx, providerId: string): Promise<number> {
    return this.sessions.deleteOfProvider(tx, providerId);
  }

  /** Ends, in `tx`, the browser sessions this identity provider started for addresses of `domain` (an organization's domain removed); how many. */
  endForProviderDomain(tx: Tx, providerId: string, domain: string): Promise<number> {
    return this.sessions.deleteOfProviderForDomain(tx, providerId, domain);
  }

  /** At most `limit` sessions expired before `now`, in `tx` (retention); how many. */
  purgeExpired(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.sessions.deleteExpired(tx, now, limit);
  }

  /** Runs the session chain for one request. */
  handle(req: Request, res: Response, next: NextFunction): void {
    this.chain!(req, res, next);
  }

  /**
   * Before sign-in: what the new session keeps of this one is the moment of sign-in, from which
   * the absolute lifetime counts, and the account's credential epoch, with which it ends.
   */
  startSignedInSession(req: Request, credentialEpoch: number, amr: string[]): void {
    delete req.session.csrfToken;
    delete req.session.pendingSignIn;
    // A sign-in is no re-confirmation (sudo-rule.ts reconfirmedJustNow), whatever this browser confirmed before it.
    delete req.session.reconfirmedAt;
    req.session.signedInAt = req.session.sudoAt = this.clock.now().getTime();
    req.session.credentialEpoch = credentialEpoch;
    recordSignInProof(req, amr);
  }

  private readonly endAtAbsoluteLifetime = (req: Request, _res: Response, next: NextFunction): void => {
    const signedInAt = req.session?.signedInAt;
    if (!req.webUser || (signedInAt !== undefined && this.clock.now().getTime() - signedInAt < this.config.webSessionMaxSeconds * 1000)) {
      return next();
    }
    req.webUser = undefined;
    req.session.regenerate(next);
  };
}
