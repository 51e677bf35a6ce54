import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ERROR_CODES, SERVICE_NAME } from '@prospect/contract';
import type { FastifyRequest } from 'fastify';
import { AuditService } from '../audit/audit.service.js';
import { ApiException } from '../common/api-exception.js';
import { BackgroundWrites } from '../common/background-writes.js';
import { IS_PUBLIC } from '../common/public.decorator.js';
import { WebSessionService } from '../web-sessions/web-session.service.js';
import { ALLOWS_WEB_SESSION } from './allow-web-session.decorator.js';
import type { AuthPrincipal } from './auth-principal.js';
import { InvalidTokenError, type InvalidTokenReason, TokensService } from './tokens.service.js';

const REALM_CHALLENGE = `Bearer realm="${SERVICE_NAME}"`;

const REFUSALS: Record<InvalidTokenReason, string> = {
  expired: 'Your token has expired. Run `prospect auth:login` to sign in again.',
  revoked: 'Your token has been revoked. Run `prospect auth:login` to sign in again.',
  unknown: 'This token is not valid. Run `prospect auth:login` to sign in.',
};

type AuthenticatedRequest = FastifyRequest & { user?: AuthPrincipal };

/**
 * Every route requires `Authorization: Bearer <token>` unless marked
 * `@Public()`: a new route is protected by default. A route marked
 * `@AllowWebSession()` also accepts a signed-in browser's session cookie with
 * its CSRF token. Refusals are 401s with an RFC 6750 challenge whose
 * `error_description` says why (expired, revoked, unknown), so the CLI can
 * tell the person what to do.
 *
 * This is the hot path of every CLI round trip, so it is a plain guard: one
 * header split, then TokensService.verify (a cache hit on a Postgres server).
 */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: TokensService,
    private readonly webSessions: WebSessionService,
    private readonly audit: AuditService,
    private readonly background: BackgroundWrites,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const header = req.headers.authorization;
    if (!header && this.reflector.getAllAndOverride<boolean>(ALLOWS_WEB_SESSION, targets)) {
      const principal = await this.webSessionPrincipal(req);
      if (principal) {
        req.user = principal;
        return true;
      }
    }
    req.user = await this.verifyBearer(header, req.ip);
    return true;
  }

  private async verifyBearer(header: string | undefined, ip: string): Promise<AuthPrincipal> {
    const [scheme, token, ...rest] = (header ?? '').split(' ');
    if (!scheme || !/^bearer$/i.test(scheme)) {
      throw new ApiException(401, ERROR_CODES.unauthorized, 'Authentication required: send `Authorization: Bearer <token>`.', {
        'WWW-Authenticate': REALM_CHALLENGE,
      });
    }
    if (!token || rest.length) {
      throw new ApiException(400, ERROR_CODES.invalidRequest, 'The Authorization header must be `Bearer <token>`.', {
        'WWW-Authenticate': `${REALM_CHALLENGE}, error="invalid_request"`,
      });
    }
    try {
      return await this.tokens.verify(token);
    } catch (err) {
      if (!(err instanceof InvalidTokenError)) throw err;
      // Not awaited: a refused token must stay cheap to answer.
      this.background.run('audit a failed verification', () =>
        this.audit.record('token.verify_failed', { ip, detail: { reason: err.reason } }),
      );
      throw new ApiException(401, ERROR_CODES.invalidToken, REFUSALS[err.reason], {
        'WWW-Authenticate': `${REALM_CHALLENGE}, error="invalid_token", error_description="${err.message}"`,
      });
    }
  }

  private async webSessionPrincipal(req: FastifyRequest): Promise<AuthPrincipal | null> {
    const csrf = req.headers['x-csrf-token'];
    if (typeof csrf !== 'string') return null;
    const session = await this.webSessions.resolve(req);
    if (!session || !this.webSessions.checkCsrf(session, csrf)) return null;
    return { user: session.user, expiresAt: session.expiresAt, via: 'web-session' };
  }
}
