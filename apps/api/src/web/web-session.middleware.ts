import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { AuthPrincipal } from '../tokens/auth-principal.js';
import { WebSessionService } from './web-session.service.js';

/**
 * Lets a signed-in web user call POST /api/cli/auth/token for themselves:
 * the session cookie counts only with its CSRF token in `x-csrf-token`, and
 * never when a bearer token is present (the bearer guard decides then).
 */
@Injectable()
export class WebSessionPrincipalMiddleware implements NestMiddleware {
  constructor(private readonly sessions: WebSessionService) {}

  async use(req: Request & { user?: AuthPrincipal }, _res: Response, next: NextFunction) {
    try {
      const csrf = req.headers['x-csrf-token'];
      if (!req.headers.authorization && typeof csrf === 'string') {
        const session = await this.sessions.resolve(req);
        if (session && this.sessions.checkCsrf(session, csrf)) {
          req.user = { user: session.user, expiresAt: session.expiresAt, via: 'web-session' };
        }
      }
      next();
    } catch (err) {
      next(err);
    }
  }
}
