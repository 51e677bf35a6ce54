import { Injectable } from '@nestjs/common';
import type { Scope } from '@prospect/contract';
import { SignJWT } from 'jose';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { OrganizationsService } from '../organizations/organizations.service.js';
import { ID_TOKEN_TTL_SECONDS, SigningKeys } from '../server-secrets/signing-keys.js';

/** Who signed in, as an ID token says it. */
export interface IdTokenSubject {
  /** The same id GET /api/cli/auth/me answers for the person. */
  userId: string;
  email: string;
  emailVerified: boolean;
  name: string;
}

/** What the sign-in that issued the code proved, and what the client asked for. */
export interface IdTokenGrant {
  clientId: string;
  scopes: readonly Scope[];
  nonce: string | null;
  authTime: Date;
  /** RFC 8176 values: `pwd`, `otp`, `hwk`, `mfa`. */
  amr: readonly string[];
  /** When the grant was approved (the code issued): organizations left at or after it are not in `orgs` (issue #47). */
  approvedAt: Date;
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * OpenID Connect Core §2 ID tokens, signed with the current key (SigningKeys) through `jose`: `iss`
 * (PUBLIC_URL, the metadata's issuer), `sub`, `aud` (the client), `exp`, `iat`, `auth_time`,
 * `nonce`, `amr`; `name` with `profile`; `email` and `email_verified` with `email`; `orgs` with
 * `orgs` (the person's organizations and roles as they are at signing).
 */
@Injectable()
export class IdTokens {
  constructor(
    private readonly keys: SigningKeys,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly organizations: OrganizationsService,
  ) {}

  async sign(subject: IdTokenSubject, grant: IdTokenGrant): Promise<string> {
    const key = await this.keys.current();
    const now = seconds(this.clock.now());
    return new SignJWT({
      auth_time: seconds(grant.authTime),
      ...(grant.nonce !== null ? { nonce: grant.nonce } : {}),
      ...(grant.amr.length ? { amr: [...grant.amr] } : {}),
      ...(grant.scopes.includes('profile') ? { name: subject.name } : {}),
      ...(grant.scopes.includes('email') ? { email: subject.email, email_verified: subject.emailVerified } : {}),
      ...(grant.scopes.includes('orgs') ? { orgs: await this.organizations.listFor(subject.userId, grant.approvedAt) } : {}),
    })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setIssuer(this.config.publicUrl)
      .setSubject(subject.userId)
      .setAudience(grant.clientId)
      .setIssuedAt(now)
      .setExpirationTime(now + ID_TOKEN_TTL_SECONDS)
      .sign(key.privateKey);
  }
}
