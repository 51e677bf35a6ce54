import { type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { ERROR_CODES, SERVICE_NAME } from '@prospect/contract';
import { ApiException } from '../common/api-exception.js';
import { IS_PUBLIC } from '../common/public.decorator.js';
import type { AuthPrincipal } from './auth-principal.js';

const MESSAGES: Record<string, string> = {
  'token expired': 'Your token has expired. Run `prospect auth:login` to sign in again.',
  'token revoked': 'Your token has been revoked. Run `prospect auth:login` to sign in again.',
  'token unknown': 'This token is not valid. Run `prospect auth:login` to sign in.',
};

/**
 * Every route requires a bearer token unless marked `@Public()`: a new route is
 * protected by default. Failures answer 401 with an RFC 6750 challenge.
 */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override canActivate(context: ExecutionContext) {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;
    // A principal already established (e.g. by a web session guard) stands.
    if (context.switchToHttp().getRequest<{ user?: AuthPrincipal }>().user) return true;
    return super.canActivate(context);
  }

  override handleRequest<T = AuthPrincipal>(err: unknown, principal: T | false, info: unknown, _ctx: ExecutionContext, status?: number): T {
    if (err) throw err;
    if (principal) return principal;
    // passport-http-bearer fails with 400 for a malformed Authorization header.
    if (status === 400) {
      throw new ApiException(400, ERROR_CODES.invalidRequest, 'The Authorization header must be `Bearer <token>`.', {
        'WWW-Authenticate': `Bearer realm="${SERVICE_NAME}", error="invalid_request"`,
      });
    }
    const challenge = typeof info === 'string' ? info : `Bearer realm="${SERVICE_NAME}"`;
    const description = /error_description="([^"]*)"/.exec(challenge)?.[1];
    if (!description) {
      throw new ApiException(401, ERROR_CODES.unauthorized, 'Authentication required: send `Authorization: Bearer <token>`.', {
        'WWW-Authenticate': challenge,
      });
    }
    throw new ApiException(401, ERROR_CODES.invalidToken, MESSAGES[description] ?? 'This token is not valid.', {
      'WWW-Authenticate': challenge,
    });
  }
}
