import { SetMetadata } from '@nestjs/common';
import type { Scope } from '@prospect/contract';

export const REQUIRED_SCOPE = 'prospect:requiredScope';

/**
 * A route a bearer token may call only if it was granted `scope` (RFC 6750 §3.1: `403
 * insufficient_scope` otherwise). A signed-in browser's session has every scope.
 */
export const RequireScope = (scope: Scope) => SetMetadata(REQUIRED_SCOPE, scope);
