import { Injectable } from '@nestjs/common';
import type { IssueTokenRequest, IssuedTokenResponse } from '@prospect/contract';
import { badRequest, forbidden, notFound } from '../common/api-exception.js';
import { AppConfig } from '../config/app-config.js';
import { Clock } from '../common/clock.js';
import { toPublicUser } from '../users/user.entity.js';
import { normalizeEmail, UsersService } from '../users/users.service.js';
import type { AuthPrincipal } from '../auth/auth-principal.js';
import { TokensService } from '../tokens/tokens.service.js';
import { EmailVerificationService } from '../accounts/email-verification.service.js';

/** POST /api/cli/auth/token: anyone may issue for themselves, admins for anyone. */
@Injectable()
export class TokenIssuanceService {
  constructor(
    private readonly tokens: TokensService,
    private readonly users: UsersService,
    private readonly config: AppConfig,
    private readonly verification: EmailVerificationService,
    private readonly clock: Clock,
  ) {}

  async issueFor(caller: AuthPrincipal, request: IssueTokenRequest, ip: string | null): Promise<IssuedTokenResponse> {
    const max = this.config.accessTokenMaxTtlSeconds;
    if (request.expiresInSeconds !== undefined && request.expiresInSeconds > max) {
      throw badRequest(`expiresInSeconds must be at most ${max} (${Math.floor(max / 86_400)} days) on this server.`);
    }
    const forOther = request.userEmail !== undefined && normalizeEmail(request.userEmail) !== caller.user.email;
    if (forOther && caller.user.role !== 'admin') throw forbidden('Only an admin may issue a token for another user.');
    const target = forOther ? await this.users.findByEmail(request.userEmail!) : caller.user;
    if (!target) throw notFound('No user with that e-mail address.');
    if ('disabledAt' in target && target.disabledAt) throw forbidden('That account is disabled: enable it on /admin/users first.');
    // A person signed in on the web but not yet verified (REQUIRE_EMAIL_VERIFICATION) makes no tokens.
    if (!forOther && caller.via === 'web-session' && this.verification.blocks(caller.user)) {
      throw forbidden('Confirm your e-mail address first: follow the link in the mail we sent you.');
    }
    // As on the tokens page: a browser mints tokens only in sudo mode.
    if (caller.via === 'web-session' && this.clock.now().getTime() - (caller.confirmedAt ?? 0) >= this.config.sudoSeconds * 1000) {
      throw forbidden('Confirm it is you first: open the tokens page and confirm with your password, then try again.');
    }
    const issued = await this.tokens.issue({
      userId: target.id,
      origin: forOther ? 'admin' : 'direct',
      // The person's tokens page says who made a token for them.
      label: forOther ? `${request.label ?? 'CLI token'} (issued by ${caller.user.email})` : (request.label ?? null),
      ttlSeconds: request.expiresInSeconds,
      ip,
      issuedBy: forOther ? caller.user.id : undefined,
    });
    return { accessToken: issued.accessToken, expiresAt: issued.expiresAt.toISOString(), user: toPublicUser(target) };
  }
}
