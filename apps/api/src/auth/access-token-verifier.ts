import { Injectable } from '@nestjs/common';
import { ACCESS_TOKEN_PREFIX, CLI_SCOPES, parseScopes, type Scope } from '@prospect/contract';
import { BackgroundWrites } from '../database/background-writes.js';
import { Clock } from '../common/clock.js';
import { looksLikeSecret, sha256 } from '../common/secrets.js';
import { Metrics } from '../metrics/metrics.js';
import { TokensService } from '../tokens/tokens.service.js';
import { TokenRevocations } from '../tokens/token-revocations.js';
import type { AuthPrincipal } from './auth-principal.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

/** Why a token was refused; told to the client in `error_description` (RFC 6750 §3). */
export type InvalidTokenReason = 'unknown' | 'expired' | 'revoked' | 'disabled';

export class InvalidTokenError extends Error {
  constructor(readonly reason: InvalidTokenReason) {
    super(reason === 'disabled' ? 'account disabled' : `token ${reason}`);
  }
}

/** A token's scopes: its own (or its sign-in's, for one made before tokens kept theirs), or the CLI's for such a token created directly. */
export function grantedScopes(scope: string | null): readonly Scope[] {
  return scope === null ? CLI_SCOPES : (parseScopes(scope) ?? []);
}

/** `lastUsedAt` is refreshed at most this often, so verification stays a read. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** The cache counter's labels, built once rather than per request. */
const CACHE_HIT = Object.freeze({ result: 'hit' });
const CACHE_MISS = Object.freeze({ result: 'miss' });

/** Access tokens presented as bearer credentials: who they stand for, or why not. */
@Injectable()
export class AccessTokenVerifier {
  constructor(
    private readonly tokens: TokensService,
    private readonly clock: Clock,
    private readonly background: BackgroundWrites,
    private readonly cache: VerifiedTokenCache,
    revocations: TokenRevocations,
    private readonly metrics: Metrics,
  ) {
    // This instance's own revocations reach its cache at once; the listener brings the others'.
    revocations.subscribe(cache);
  }

  /**
   * The hot path of every CLI round trip. A cached verification still has its
   * expiry checked; otherwise one indexed read by hash, joined to its user.
   * Throws InvalidTokenError saying why a token is refused.
   */
  async verify(rawToken: string): Promise<AuthPrincipal> {
    if (!looksLikeSecret(rawToken, ACCESS_TOKEN_PREFIX)) throw new InvalidTokenError('unknown');
    const hash = sha256(rawToken);
    const now = this.clock.now();
    const cacheKey = this.cache.enabled ? hash.toString('base64') : undefined;
    if (cacheKey) {
      const hit = this.cache.get(cacheKey);
      this.metrics.tokenCache.inc(hit ? CACHE_HIT : CACHE_MISS);
      if (hit) {
        if (hit.principal.expiresAt.getTime() <= now.getTime()) throw new InvalidTokenError('expired');
        if (this.isStale(hit.lastUsedAt, now)) {
          hit.lastUsedAt = now.getTime();
          this.touch(hit.principal.tokenId!, now);
        }
        return hit.principal;
      }
    }
    const readEpoch = this.cache.epoch;
    const token = await this.tokens.findForVerification(hash);
    if (!token) throw new InvalidTokenError('unknown');
    // Before "revoked": disabling revoked it too, and signing in again would not help.
    if (token.userDisabled) throw new InvalidTokenError('disabled');
    if (token.revokedAt) throw new InvalidTokenError('revoked');
    if (token.expiresAt.getTime() <= now.getTime()) throw new InvalidTokenError('expired');
    let lastUsedAt = token.lastUsedAt?.getTime() ?? null;
    if (this.isStale(lastUsedAt, now)) {
      lastUsedAt = now.getTime();
      this.touch(token.tokenId, now);
    }
    const principal: AuthPrincipal = {
      user: token.user,
      tokenId: token.tokenId,
      grantId: token.grantId,
      mintedBy: token.mintedBy,
      expiresAt: token.expiresAt,
      issuedAt: token.issuedAt,
      via: 'bearer',
      scopes: grantedScopes(token.scope),
      ...(token.serviceAccount ? { kind: 'service_account' as const } : {}),
    };
    if (cacheKey) this.cache.set(cacheKey, principal, lastUsedAt, readEpoch);
    return principal;
  }

  private isStale(lastUsedAt: number | null, now: Date): boolean {
    return lastUsedAt === null || now.getTime() - lastUsedAt >= LAST_USED_RESOLUTION_MS;
  }

  /** Records use without making every verification a write: at most once per resolution. */
  private touch(tokenId: string, now: Date): void {
    this.background.run('record token use', () => this.tokens.recordUse(tokenId, now, new Date(now.getTime() - LAST_USED_RESOLUTION_MS)));
  }
}
