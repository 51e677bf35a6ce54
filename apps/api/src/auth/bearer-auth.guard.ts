import { type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { ERROR_CODES, type Scope, SCOPES, SERVICE_NAME } from '@prospect/contract';
import type { Request, Response } from 'express';
import { ApiException } from '../common/api-exception.js';
import { IS_PUBLIC } from './public.decorator.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import { ALLOWS_WEB_SESSION } from './allow-web-session.decorator.js';
import { REQUIRED_SCOPE } from './require-scope.decorator.js';
import type { AuthPrincipal } from './auth-principal.js';
import { RefusedTokens } from './refused-tokens.js';
import { InvalidTokenError, type InvalidTokenReason } from './access-token-verifier.js';

const REALM_CHALLENGE = `Bearer realm="${SERVICE_NAME}"`;

/** A signed-in browser acts as the person in full. */
const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

const REFUSALS: Record<InvalidTokenReason, string> = {
  // Any client's token comes here (the CLI's, or another OAuth client's), and each client says
  // itself how to sign in again (the CLI names its command): the words fit them all.
  expired: 'Your token has expired: sign in again to get a new one.',
  revoked: 'Your token has been revoked: sign in again to get a new one.',
  unknown: 'This token is not valid: sign in to get one.',
  disabled: 'This account is disabled: ask an administrator of this service to enable it.',
};

/**
 * Every route requires `Authorization: Bearer <token>` (passport-http-bearer,
 * BearerStrategy) unless marked `@Public()`: a new route is protected by default.
 * A route marked `@AllowWebSession()` also accepts a signed-in browser's session
 * with its CSRF token. Refusals are the one error body with an RFC 6750 challenge
 * whose `error_description` says why (expired, revoked, unknown), so the CLI can
 * tell the person what to do.
 */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  constructor(
    private readonly reflector: Reflector,
    private readonly csrf: CsrfService,
    private readonly refused: RefusedTokens,
  ) {
    super({ session: false });
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const req = context.switchToHttp().getRequest<Request & { user?: AuthPrincipal }>();
    if (!req.headers.authorization && this.reflector.getAllAndOverride<boolean>(ALLOWS_WEB_SESSION, targets)) {
      const principal = this.webSessionPrincipal(req);
      if (principal) {
        req.user = principal;
        return true;
      }
    }
    // passport-http-bearer would also take a token from the query or the body (RFC 6750 §2.2–2.3),
    // where proxies and logs keep it: only the header is accepted.
    const inBody = (req.body as Record<string, unknown> | undefined)?.access_token !== undefined;
    const inQuery = req.url.includes('access_token') && (req.query as Record<string, unknown>).access_token !== undefined;
    if (inBody || inQuery) {
      throw new ApiException(400, ERROR_CODES.invalidRequest, 'Send the token in the Authorization header, never in the address or the body.', {
        'WWW-Authenticate': `${REALM_CHALLENGE}, error="invalid_request"`,
      });
    }
    await super.canActivate(context);
    this.checkScope(req.user!, this.reflector.getAllAndOverride<Scope | undefined>(REQUIRED_SCOPE, targets), context);
    return true;
  }

  /**
   * The route's scope, if it names one, must be among the token's: else `403 insufficient_scope`
   * with the RFC 6750 challenge naming it. Every bearer answer says what the token may do in
   * `X-OAuth-Scopes`, as GitHub's API does, so a client can tell without introspection.
   */
  private checkScope(principal: AuthPrincipal, required: Scope | undefined, context: ExecutionContext): void {
    context.switchToHttp().getResponse<Response>().setHeader('X-OAuth-Scopes', principal.scopes.join(', '));
    if (!required || principal.scopes.includes(required)) return;
    throw new ApiException(403, ERROR_CODES.insufficientScope, `This token was not granted the “${required}” scope (${SCOPES[required]}), which this needs.`, {
      'WWW-Authenticate': `${REALM_CHALLENGE}, error="insufficient_scope", scope="${required}"`,
    });
  }

  /**
   * passport's verdict: the principal, or why not. `status` 400 is passport-http-bearer's
   * answer to a malformed header; no principal and no error is a missing header.
   */
  override handleRequest<T = AuthPrincipal>(err: unknown, principal: T | false, _info: unknown, context: ExecutionContext, status?: number): T {
    if (err instanceof InvalidTokenError) {
      // Counted, not written: a refused token must stay cheap to answer.
      this.refused.count(context.switchToHttp().getRequest<Request>().ip, err.reason);
      throw new ApiException(401, ERROR_CODES.invalidToken, REFUSALS[err.reason], {
        'WWW-Authenticate': `${REALM_CHALLENGE}, error="invalid_token", error_description="${err.message}"`,
      });
    }
    if (err) throw err;
    if (principal) return principal;
    if (status === 400) {
      throw new ApiException(400, ERROR_CODES.invalidRequest, 'The Authorization header must be `Bearer <token>`.', {
        'WWW-Authenticate': `${REALM_CHALLENGE}, error="invalid_request"`,
      });
    }
    throw new ApiException(401, ERROR_CODES.unauthorized, 'Authentication required: send `Authorization: Bearer <token>`.', {
      'WWW-Authenticate': REALM_CHALLENGE,
    });
  }

  private webSessionPrincipal(req: Request): AuthPrincipal | null {
    if (!req.webUser || !this.csrf.isValid(req)) return null;
    return { user: req.webUser, expiresAt: req.session.cookie.expires ?? new Date(Date.now()), via: 'web-session', scopes: ALL_SCOPES, confirmedAt: req.session.sudoAt ?? 0 };
  }
}
