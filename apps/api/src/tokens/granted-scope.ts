import { parseScopes, type Scope, SCOPES } from '@prospect/contract';
import type { UserRole } from '../users/user.entity.js';

/** What a token issued from a grant now carries, and the latest it may live for it. */
export interface ScopeNow {
  /** Space-separated, in the registry's order. */
  scope: string;
  /** The end of the grant's `admin` when the token carries it (it must expire by then); else null. */
  endsBy: Date | null;
}

/**
 * The scope a token issued (or refreshed) now from a device login's grant carries: what was
 * approved, with `admin` only while its admin grant lasts (ADMIN_GRANT_SECONDS from the approval;
 * `adminUntil` null: never, as for a login approved before admin was short-lived). A token that
 * carries `admin` expires no later than the grant's `admin` does, so holding it means it is fresh.
 */
export function scopeOfGrantAt(grantScope: string, adminUntil: Date | null, now: Date): ScopeNow {
  const scopes = parseScopes(grantScope) ?? [];
  if (!scopes.includes('admin')) return { scope: scopes.join(' '), endsBy: null };
  if (adminUntil && adminUntil.getTime() > now.getTime()) return { scope: scopes.join(' '), endsBy: adminUntil };
  return { scope: scopes.filter((scope) => scope !== 'admin').join(' '), endsBy: null };
}

/**
 * The scopes of the API's own routes; `openid` and `email` belong to OpenID Connect sign-ins
 * (id_token, userinfo), not to a CLI token. `orgs` is a person's like `profile`: any member acts in
 * an organization with their role there, which the organization's routes check, not the scope.
 */
const API_SCOPES: readonly Scope[] = ['profile', 'tokens', 'admin', 'orgs'];

/**
 * The scope of a token a person makes in a signed-in browser (the tokens page, or the API with the
 * session's CSRF token, both in sudo mode): what they can do, `admin` only when an administrator
 * asks for it (the tokens page's box), as a device login asks for it; such a token ends within
 * ADMIN_GRANT_SECONDS (TokensService).
 */
export function siteTokenScope(role: UserRole, asksForAdmin = false): string {
  return API_SCOPES.filter((scope) => scope !== 'admin' || (role === 'admin' && asksForAdmin)).join(' ');
}

/**
 * The scope of a token made with a bearer token: at most the minter's. `admin` only for an
 * administrator making one for themselves: one made for someone else (an administrator's act)
 * never carries it (administration is not handed on through a token), nor does one of a person
 * who is no administrator, whatever an old token's scope says (a token without a stored scope
 * reads as the CLI's, `admin` included).
 */
export function mintedTokenScope(minterScopes: readonly Scope[], forSomeoneElse: boolean, minterRole: UserRole): string {
  const mayAdminister = !forSomeoneElse && minterRole === 'admin';
  return (Object.keys(SCOPES) as Scope[]).filter((scope) => minterScopes.includes(scope) && (scope !== 'admin' || mayAdminister)).join(' ');
}
