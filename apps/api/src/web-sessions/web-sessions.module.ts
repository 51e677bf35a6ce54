import { Injectable, Module, type NestMiddleware } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import type { NextFunction, Request, Response } from 'express';
import { UsersModule } from '../users/users.module.js';
import { CsrfService } from './csrf.service.js';
import { SessionSerializer } from './session.serializer.js';
import { WebSessions } from './web-sessions.js';
import { WebSessionsRepository } from './web-sessions.repository.js';

/** Nest's handle on the session chain, for `consumer.apply(...)`. */
@Injectable()
export class WebSessionMiddleware implements NestMiddleware {
  constructor(private readonly sessions: WebSessions) {}
  use(req: Request, res: Response, next: NextFunction): void {
    this.sessions.handle(req, res, next);
  }
}

/**
 * Browser sign-in sessions, kept in Postgres, and their CSRF tokens. Its own module
 * because two concerns read them: the web pages, and the bearer guard, which also
 * accepts a session (with its CSRF token) on the routes marked `@AllowWebSession()`.
 */
@Module({
  imports: [PassportModule, UsersModule],
  providers: [WebSessions, SessionSerializer, CsrfService, WebSessionMiddleware, WebSessionsRepository],
  exports: [WebSessions, CsrfService, WebSessionMiddleware],
})
export class WebSessionsModule {}
