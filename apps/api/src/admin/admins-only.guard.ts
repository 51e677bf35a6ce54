import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { AuthPrincipal } from '../auth/auth-principal.js';
import { forbidden } from '../common/api-exception.js';

/**
 * The admin JSON API is for administrators: after the global bearer guard has established the
 * caller (and @RequireScope('admin') its token's scope), anyone else gets a 403.
 */
@Injectable()
export class AdminsOnlyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    if (context.switchToHttp().getRequest<{ user?: AuthPrincipal }>().user?.user.role === 'admin') return true;
    throw forbidden('Only an administrator may use the administration API.');
  }
}
