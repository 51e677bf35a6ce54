import { Injectable } from '@nestjs/common';
import { ERROR_CODES, OAUTH_ROUTES } from '@prospect/contract';
import cors, { type CorsOptions } from 'cors';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { originOf } from '../common/request-origin.js';
import { AppConfig } from '../config/app-config.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { oauthError } from './oauth-errors.js';

/**
 * The endpoints a browser client (an extension's service worker, a single-page app) calls across
 * origins: tokens, revocation, userinfo, the JWKS and the discovery documents. Never the
 * authorization endpoint or the pages, where a person's browser goes itself.
 */
const CORS_PATHS: ReadonlySet<string> = new Set([
  OAUTH_ROUTES.token,
  OAUTH_ROUTES.revoke,
  OAUTH_ROUTES.userinfo,
  OAUTH_ROUTES.jwks,
  OAUTH_ROUTES.metadata,
  OAUTH_ROUTES.openidConfiguration,
]);

/** What an allowed origin may do: read the answer (and its Bearer challenge) of a GET or a form POST with Authorization. */
const ALLOWED: CorsOptions = {
  origin: true,
  methods: ['GET', 'POST'],
  allowedHeaders: ['Authorization', 'Content-Type'],
  exposedHeaders: ['WWW-Authenticate'],
  // Preflights cached 10 minutes: an origin an admin removes stops working for new preflights within that.
  maxAge: 600,
  credentials: false,
};

/**
 * CORS for the OAuth endpoints, with the `cors` middleware configured per request: an origin is
 * answered only if some enabled client lists it in its allowed origins (a preflight names no
 * client), read from Postgres each time, so every replica agrees at once. The request itself is
 * then checked against its own client's origins (requireAllowedOrigin), by the endpoint that knows
 * its client.
 */
@Injectable()
export class OAuthCors {
  constructor(
    private readonly clients: OAuthClientsService,
    private readonly config: AppConfig,
  ) {}

  /** For bootstrap.ts: one layer for every request (no path mount: Express would rewrite req.url), acting on CORS_PATHS only. */
  readonly middleware: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
    if (!CORS_PATHS.has(req.path)) return next();
    // The answer differs by Origin, allowed or not: caches must keep them apart.
    res.vary('Origin');
    this.cors(req, res, next);
  };

  private readonly cors = cors<Request>((req, callback) => {
    const origin = req.get('origin');
    if (!origin || this.isOwn(req, origin)) return callback(null, { origin: false });
    this.clients.anyAllowsOrigin(origin).then(
      (allowed) => callback(null, allowed ? ALLOWED : { origin: false }),
      (err: Error) => callback(err),
    );
  });

  /**
   * A cross-origin request to an endpoint of `client` must come from one of its own allowed origins
   * (another client's origin passed the preflight, which names no client). Refused otherwise, with
   * the CORS answer taken back so the page cannot read even the refusal.
   */
  requireAllowedOrigin(req: Request, res: Response, client: { id: string; allowedOrigins: readonly string[] }): void {
    const origin = req.get('origin');
    if (!origin || this.isOwn(req, origin) || client.allowedOrigins.includes(origin)) return;
    for (const header of ['Access-Control-Allow-Origin', 'Access-Control-Allow-Credentials', 'Access-Control-Expose-Headers']) res.removeHeader(header);
    throw oauthError(ERROR_CODES.invalidClient, `${client.id} does not accept requests from ${origin}: an administrator adds that origin to the client's allowed origins.`);
  }

  /** Same-origin requests (this server's own pages) are no CORS matter. */
  private isOwn(req: Request, origin: string): boolean {
    return origin === new URL(this.config.publicUrl).origin || origin === originOf(req);
  }
}
