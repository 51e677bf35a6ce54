import { Module } from '@nestjs/common';
import { WebSessionService } from './web-session.service.js';

/**
 * Browser sign-in sessions, kept in Postgres. Its own module because two
 * concerns read them: the web pages, and the bearer guard, which also accepts a
 * session (with its CSRF token) on the routes marked `@AllowWebSession()`.
 */
@Module({
  providers: [WebSessionService],
  exports: [WebSessionService],
})
export class WebSessionsModule {}
