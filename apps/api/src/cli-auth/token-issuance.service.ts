import { stepBeforeApproving } from '../grants/approval-rules.js';
import { Injectable } from '@nestjs/common';
import type { IssueTokenRequest, IssuedTokenResponse } from '@prospect/contract';
import { badRequest, forbidden, notFound } from '../common/api-exception.js';
import { AppConfig } from '../config/app-config.js';
import { Clock } from '../common/clock.js';
import { toPublicUser } from '../users/user.entity.js';
import { normalizeEmail, UsersService } from '../users/users.service.js';
import type { AuthPrincipal } from '../auth/auth-principal.js';
import { inSudoMode } from '../auth/sudo-rule.js';
import { mintedTokenScope, siteTokenScope } from '../tokens/granted-scope.js';
import {
  IdempotencyKeyInProgressError,
  IdempotencyKeyReusedError,
  type IssuedToken,
  type IssueTokenInput,
  MinterEndedError,
  TokensService,
} from '../tokens/tokens.service.js';
import { EmailVerificationService } from '../accounts/email-verification.service.js';
import { sha256 } from '../common/secrets.js';
import { adminScopeNeeded, idempotencyKeyInProgress, idempotencyKeyReused, minterEnded } from './cli-auth-answers.js';

/**
 * POST /api/cli/auth/token: anyone may issue for themselves, admins for anyone. A token never
 * exceeds what made it: made with a bearer token, it has at most that token's scopes and lifetime
 * and is revoked with it (TokensService); made in a signed-in browser (in sudo mode), the person's
 * scopes, `admin` only for an administrator.
 */
@Injectable()
export class TokenIssuanceService {
  constructor(
    private readonly tokens: TokensService,
    private readonly users: UsersService,
    private readonly config: AppConfig,
    private readonly verification: EmailVerificationService,
    private readonly clock: Clock,
  ) {}

  /**
   * @param once the request's Idempotency-Key and the credential it came with: the same key from
   *   the same credential with the same body within IDEMPOTENCY_WINDOW_HOURS answers the same token
   *   (after the same checks, as the caller stands now), so a request sent again after a lost answer
   *   never makes a second token nobody holds. A key with another body is a 422; while a request with
   *   the key is under way, a 409.
   */
  async issueFor(caller: AuthPrincipal, request: IssueTokenRequest, ip: string | null, once?: { key: string; credential: string }, userAgent: string | null = null): Promise<IssuedTokenResponse> {
    const max = this.config.accessTokenMaxTtlSeconds;
    if (request.expiresInSeconds !== undefined && request.expiresInSeconds > max) {
      throw badRequest(`expiresInSeconds must be at most ${max} (${Math.floor(max / 86_400)} days) on this server.`);
    }
    const forOther = request.userEmail !== undefined && normalizeEmail(request.userEmail) !== caller.user.email;
    if (forOther && caller.user.role !== 'admin') throw forbidden('Only an admin may issue a token for another user.');
    // An admin's token acts for someone else only with a fresh admin grant: one that carries
    // `admin` (asked for, approved in sudo mode, at most ADMIN_GRANT_SECONDS old).
    if (forOther && !caller.scopes.includes('admin')) throw adminScopeNeeded();
    const target = forOther ? await this.users.findByEmail(request.userEmail!) : caller.user;
    if (!target) throw notFound('No user with that e-mail address.');
    if ('disabledAt' in target && target.disabledAt) throw forbidden('That account is disabled: enable it on /admin/users first.');
    // A browser mints tokens under the rule of every approval, as on the tokens page (grants/approval-rules.ts); the
    // bearer guard let through only a signed-in session with its second factor done. Its own address proven, for itself.
    if (caller.via === 'web-session') {
      const step = stepBeforeApproving({
        signedIn: true,
        mustEnrolSecondFactor: false,
        addressUnproven: !forOther && this.verification.blocks(caller.user),
        inSudoMode: inSudoMode(caller.confirmedAt, this.clock, this.config),
      });
      if (step === 'verify-email') throw forbidden('Confirm your e-mail address first: follow the link in the mail we sent you.');
      if (step === 'confirm') throw forbidden('Confirm it is you first: open the tokens page and confirm with your password, then try again.');
    }
    const byBearer = caller.via === 'bearer' && caller.tokenId !== undefined;
    const input: IssueTokenInput = {
      userId: target.id,
      origin: forOther ? 'admin' : 'direct',
      // The person's tokens page says who made a token for them.
      label: forOther ? `${request.label ?? 'CLI token'} (issued by ${caller.user.email})` : (request.label ?? null),
      ttlSeconds: request.expiresInSeconds,
      ip,
      userAgent,
      issuedBy: forOther ? caller.user.id : undefined,
      // Capped, not refused: the request names no scopes, so it asks for a token like the one it
      // is made with, and gets at most that (the answer's expiresAt says how long it lives).
      scope: byBearer || forOther ? mintedTokenScope(caller.scopes, forOther, caller.user.role) : siteTokenScope(caller.user.role),
      minter: byBearer ? { tokenId: caller.tokenId!, grantId: caller.grantId ?? null } : undefined,
    };
    const answer = (issued: IssuedToken): IssuedTokenResponse => ({ accessToken: issued.accessToken, expiresAt: issued.expiresAt.toISOString(), user: toPublicUser(target) });
    try {
      if (!once) return answer(await this.tokens.issue(input));
      const idempotent = { secret: `token.issue\n${once.credential}\n${once.key}`, requestHash: fingerprint(request), callerId: caller.user.id };
      return await this.tokens.issueIdempotently(idempotent, input, answer);
    } catch (err) {
      if (err instanceof MinterEndedError) throw minterEnded();
      if (err instanceof IdempotencyKeyInProgressError) throw idempotencyKeyInProgress();
      if (err instanceof IdempotencyKeyReusedError) throw idempotencyKeyReused();
      throw err;
    }
  }
}

/** The request's body as the SHA-256 of its fields in a fixed order: the same body, however its JSON was written. */
function fingerprint(request: IssueTokenRequest): Buffer {
  const fields = Object.entries(request)
    .filter(([, value]) => value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return sha256(JSON.stringify(fields));
}
