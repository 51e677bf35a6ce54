import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Scope } from '@prospect/contract';
import type { UserRole } from '../users/user.entity.js';

/** Who is calling, as established by the bearer guard (or a web session). */
export interface AuthPrincipal {
  user: { id: string; email: string; name: string; role: UserRole; emailVerified?: boolean };
  /** The access token used, when the caller presented one. */
  tokenId?: string;
  /** Its grant (a device login's or a code's session), for a grant's token: with tokenId, the grant the caller acts with. */
  grantId?: string | null;
  /** The grant a token made with a bearer token was made with (a token, or a session); null for any other. */
  mintedBy?: { tokenId: string | null; grantId: string | null } | null;
  /**
   * A bearer token's: when its grant was approved (kept by refreshes; a token made directly, when it
   * was made); a web session's: when it signed in. It does not act for an organization the person
   * left at or after it (organizations/: `departureEndsIt`; docs/organizations.md).
   */
  issuedAt?: Date;
  /** When the credential stops being valid. */
  expiresAt: Date;
  /** What it may do (SCOPES): a token's granted scopes; a signed-in browser may do everything (in sudo mode where it matters). */
  scopes: readonly Scope[];
  via: 'bearer' | 'web-session';
  /**
   * Set for a service account's token (issue #45): a machine of one organization, with no address
   * (`user.email` is empty). The bearer guard lets it reach only routes marked
   * `@AllowServiceAccount()`; every other route refuses it before its handler runs.
   */
  kind?: 'service_account';
  /** A web session's last proof of who it is (sign-in or re-confirmation, ms): sudo mode counts from it. */
  confirmedAt?: number;
}

/** The authenticated caller of this request. */
export const Principal = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): AuthPrincipal => ctx.switchToHttp().getRequest<{ user: AuthPrincipal }>().user,
);
