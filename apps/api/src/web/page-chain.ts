import { Injectable } from '@nestjs/common';
import { OAUTH_ROUTES } from '@prospect/contract';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { BODY_LIMIT } from '../common/body-limit.js';
import { API_PREFIX, SCIM_PREFIX } from '../common/http-body.js';
import { refuseMalformedForms } from '../common/well-formed-text.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { pageHeaders } from './page-headers.js';

/** Where the JSON API, the OAuth endpoints, the discovery documents and SCIM provisioning live: not pages. */
const NOT_PAGES = [API_PREFIX, '/oauth/', '/.well-known/', SCIM_PREFIX];
const AUTHORIZE = OAUTH_ROUTES.authorize;

/**
 * Whether a request is for a page: everything but the JSON API, the OAuth endpoints and the
 * discovery documents, except the authorization endpoint (GET, and its POSTs below it: the sign-in
 * it needs, the consent page), which is a page under OAuth's path. Paths compare as Express routes
 * them, ignoring case. A bare prefix (`/api/`, `/oauth/`) is not under it: no route serves it, and
 * its 404 is a page's.
 */
export function isPagePath(method: string, path: string): boolean {
  // Every API request, first and without a copy: the API's paths as its clients write them.
  if (path.length > API_PREFIX.length && path.startsWith(API_PREFIX)) return false;
  const lower = path.slice(0, 64).toLowerCase();
  const read = method === 'GET' || method === 'HEAD';
  // GET /oauth/authorize (a trailing slash is the same route), POST /oauth/authorize/…
  if (lower === AUTHORIZE || lower === `${AUTHORIZE}/`) return read || (method === 'POST' && lower.length > AUTHORIZE.length);
  if (lower.startsWith(`${AUTHORIZE}/`)) return method === 'POST';
  return !NOT_PAGES.some((prefix) => lower.length > prefix.length && lower.startsWith(prefix));
}

/**
 * What every page request goes through: the document headers, the form parser (pages read
 * urlencoded forms; the JSON API never runs it), the web session.
 *
 * Mounted by bootstrap.ts as one router layer at the root that passes every other request on at
 * the cost of a string comparison (issue #35): mounted through Nest's middleware consumer, on
 * `{*rest}` with the API excluded, every API request paid a route match with its parameters and
 * Nest's exclusion patterns, tested one by one.
 */
@Injectable()
export class PageChain {
  private readonly chain = express
    .Router()
    .use(pageHeaders, express.urlencoded({ limit: BODY_LIMIT, extended: false, parameterLimit: 50 }), refuseMalformedForms, (req, res, next) =>
      this.sessions.handle(req, res, next),
    );

  constructor(private readonly sessions: WebSessions) {}

  readonly middleware: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
    if (!isPagePath(req.method, req.path)) return next();
    this.chain(req, res, next);
  };
}
