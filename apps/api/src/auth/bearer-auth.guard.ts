import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ADMIN_LOGIN_COMMAND, ERROR_CODES, type Scope, SCOPES, SERVICE_NAME } from '@prospect/contract';
import type { Request, RequestHandler, Response } from 'express';
import passport from 'passport';
import { ApiException, forbidden } from '../common/api-exception.js';
import { IS_PUBLIC } from './public.decorator.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import { sessionIssuedAt } from '../web-sessions/web-account.js';
import { ALLOWS_WEB_SESSION } from './allow-web-session.decorator.js';
import { ALLOWS_SERVICE_ACCOUNT } from './allow-service-account.decorator.js';
import { REQUIRED_SCOPE } from './require-scope.decorator.js';
import type { AuthPrincipal } from './auth-principal.js';
import { RefusedTokens } from './refused-tokens.js';
import { InvalidTokenError, type InvalidTokenReason } from './access-token-verifier.js';

const REALM_CHALLENGE = `Bearer realm="${SERVICE_NAME}"`;

/** A signed-in browser acts as the person in full. */
const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

/**
 * The administration API refusing a token without `admin`: never had unless asked for, and lasting
 * ADMIN_GRANT_SECONDS after its approval, so the way back is a sign-in that asks for it. The body's
 * message, and the challenge's error_description (RFC 6750 §3: no `"` or `\`).
 */
const ADMIN_REFUSAL = [
  `This token does not carry the “admin” scope: administration is granted only to a sign-in that asks for it, and only for a few hours after its approval. To administer, sign in again asking for it (with the CLI: \`${ADMIN_LOGIN_COMMAND}\`).`,
  `administration needs a fresh admin grant: sign in again with ${ADMIN_LOGIN_COMMAND}`,
] as const;

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
 *
 * passport's middleware is built once (issue #21): @nestjs/passport's AuthGuard builds it anew
 * for every request (`passport.authenticate(type, options, callback)`), with the closures and
 * the promise around them. Built without a callback, it reports through `next` instead: the
 * principal in `req.user` (assignProperty: no req.logIn, no transformAuthInfo), the strategy's
 * error (InvalidTokenError from the verifier) as is, and a failure (no header, a malformed one)
 * as an AuthenticationError with passport-http-bearer's status (failWithError).
 */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  private readonly authenticate: RequestHandler = passport.authenticate('bearer', { session: false, assignProperty: 'user', failWithError: true });

  constructor(
    private readonly reflector: Reflector,
    private readonly csrf: CsrfService,
    private readonly refused: RefusedTokens,
  ) {}

  /** What a route's decorators say, read once per handler (issue #35): they never change after startup. */
  private readonly routeRules = new WeakMap<object, RouteRules>();

  private rulesOf(context: ExecutionContext): RouteRules {
    const handler = context.getHandler();
    const owner = context.getClass();
    let rules = this.routeRules.get(handler);
    // A handler inherited by another controller class reads that class's decorators afresh.
    if (!rules || rules.owner !== owner) {
      const targets = [handler, owner];
      rules = {
        owner,
        isPublic: this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets) ?? false,
        allowsWebSession: this.reflector.getAllAndOverride<boolean>(ALLOWS_WEB_SESSION, targets) ?? false,
        allowsServiceAccount: this.reflector.getAllAndOverride<boolean>(ALLOWS_SERVICE_ACCOUNT, targets) ?? false,
        requiredScope: this.reflector.getAllAndOverride<Scope | undefined>(REQUIRED_SCOPE, targets),
      };
      this.routeRules.set(handler, rules);
    }
    return rules;
  }

  /** A public route's answer is a plain `true`: Nest then awaits nothing (no promise per request, issue #35). */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const rules = this.rulesOf(context);
    return rules.isPublic || this.authenticated(context, rules);
  }

  private async authenticated(context: ExecutionContext, rules: RouteRules): Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<Request & { user?: AuthPrincipal }>();
    if (!req.headers.authorization && rules.allowsWebSession) {
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
    const res = http.getResponse<Response>();
    const refusal = await new Promise<unknown>((resolve) => this.authenticate(req, res, resolve));
    if (refusal !== undefined) throw this.refusalOf(refusal, req);
    // Deny by default (issue #45): a service account reaches only the routes made for it.
    if (req.user!.kind === 'service_account' && !rules.allowsServiceAccount) {
      throw forbidden('A service account’s token cannot be used here: this route acts for a person.');
    }
    this.checkScope(req.user!, rules.requiredScope, res);
    return true;
  }

  /**
   * The route's scope, if it names one, must be among the token's: else `403 insufficient_scope`
   * with the RFC 6750 challenge naming it. Every bearer answer says what the token may do in
   * `X-OAuth-Scopes`, as GitHub's API does, so a client can tell without introspection.
   */
  private checkScope(principal: AuthPrincipal, required: Scope | undefined, res: Response): void {
    res.setHeader('X-OAuth-Scopes', principal.scopes.join(', '));
    if (!required || principal.scopes.includes(required)) return;
    const [message, description] = required === 'admin' ? ADMIN_REFUSAL : [`This token was not granted the “${required}” scope (${SCOPES[required]}), which this needs.`, undefined];
    throw new ApiException(403, ERROR_CODES.insufficientScope, message, {
      'WWW-Authenticate': `${REALM_CHALLENGE}, error="insufficient_scope", scope="${required}"${description ? `, error_description="${description}"` : ''}`,
    });
  }

  /**
   * What passport passed to `next` instead of a principal, as the answer: a refused token
   * (InvalidTokenError), passport-http-bearer's 400 for a malformed header, or its 401 for none.
   */
  private refusalOf(reason: unknown, req: Request): unknown {
    if (reason instanceof InvalidTokenError) {
      // Counted, not written: a refused token must stay cheap to answer.
      this.refused.count(req.ip, reason.reason);
      return new ApiException(401, ERROR_CODES.invalidToken, REFUSALS[reason.reason], {
        'WWW-Authenticate': `${REALM_CHALLENGE}, error="invalid_token", error_description="${reason.message}"`,
      });
    }
    if (!isAuthenticationError(reason)) return reason;
    if (reason.status === 400) {
      return new ApiException(400, ERROR_CODES.invalidRequest, 'The Authorization header must be `Bearer <token>`.', {
        'WWW-Authenticate': `${REALM_CHALLENGE}, error="invalid_request"`,
      });
    }
    return new ApiException(401, ERROR_CODES.unauthorized, 'Authentication required: send `Authorization: Bearer <token>`.', {
      'WWW-Authenticate': REALM_CHALLENGE,
    });
  }

  /**
   * The signed-in browser's session with its CSRF token, as the pages see it: one halfway through
   * signing in (its second step not taken), or one that must still set up a second factor
   * (REQUIRE_SECOND_FACTOR), is refused as the pages refuse it, with a 403 saying what to do.
   * Verification and sudo mode are the route's to ask (TokenIssuanceService), as its page does.
   */
  private webSessionPrincipal(req: Request): AuthPrincipal | null {
    if (!req.session || !this.csrf.isValid(req)) return null;
    if (!req.webUser) {
      if (req.session.pendingSignIn) throw forbidden('Finish signing in first: enter the code from your authenticator app (or a recovery code, or use your passkey) on the sign-in page.');
      return null;
    }
    if (req.session.mustEnrolSecondFactor) {
      throw forbidden('This service requires a second factor: set up an authenticator app or a passkey on /settings/security first.');
    }
    return {
      user: req.webUser,
      issuedAt: sessionIssuedAt(req),
      expiresAt: req.session.cookie.expires ?? new Date(Date.now()),
      via: 'web-session',
      scopes: ALL_SCOPES,
      confirmedAt: req.session.sudoAt ?? 0,
    };
  }
}

interface RouteRules {
  owner: object;
  isPublic: boolean;
  allowsWebSession: boolean;
  allowsServiceAccount: boolean;
  requiredScope: Scope | undefined;
}

/** passport's failure (failWithError): an Error named AuthenticationError with the strategy's status. */
function isAuthenticationError(reason: unknown): reason is Error & { status?: number } {
  return reason instanceof Error && reason.name === 'AuthenticationError';
}
