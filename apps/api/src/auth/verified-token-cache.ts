import { LRUCache } from 'lru-cache';
import type { AuthPrincipal } from './auth-principal.js';

/** The longest a cached verification is trusted, even if a revocation notice were lost. */
export const CACHE_MAX_AGE_MS = 30_000;
/** Bounded memory: about 0.5 KB an entry, so 50,000 entries stay under 25 MB. */
export const CACHE_MAX_ENTRIES = 50_000;

export interface CachedVerification {
  principal: AuthPrincipal;
  lastUsedAt: number | null;
}

/**
 * Verified tokens by the SHA-256 of the token (raw tokens are never kept), in an
 * lru-cache bounded in entries and age, on the service's clock. Correct only while
 * revocations reach it: the owner switches it off (`enabled = false` flushes it)
 * whenever its revocation listener is down.
 *
 * What lru-cache does not do is ours: a verification read from the database
 * before an eviction arrived must not be cached after it. `epoch` moves on every
 * eviction, and `set` refuses entries whose read began in an older epoch.
 */
export class VerifiedTokenCache {
  private readonly entries: LRUCache<string, CachedVerification>;
  private readonly keyByTokenId = new Map<string, string>();
  private active = false;
  epoch = 0;

  /** @param now the service's clock, in ms (tests move it). */
  constructor(now: () => number = Date.now, maxEntries = CACHE_MAX_ENTRIES, maxAgeMs = CACHE_MAX_AGE_MS) {
    this.entries = new LRUCache({
      max: maxEntries,
      ttl: maxAgeMs,
      // Expired entries are dropped when read; no timer per entry.
      ttlAutopurge: false,
      // Read the clock on every check: an entry must not outlive its age by lru-cache's default 1 ms resolution window in tests.
      ttlResolution: 0,
      perf: { now },
      dispose: (entry, key) => {
        if (this.keyByTokenId.get(entry.principal.tokenId!) === key) this.keyByTokenId.delete(entry.principal.tokenId!);
      },
    });
  }

  get enabled(): boolean {
    return this.active;
  }

  set enabled(on: boolean) {
    if (!on || !this.active) this.clear();
    this.active = on;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): CachedVerification | undefined {
    return this.active ? this.entries.get(key) : undefined;
  }

  set(key: string, principal: AuthPrincipal, lastUsedAt: number | null, readEpoch: number): void {
    if (!this.active || readEpoch !== this.epoch) return;
    this.entries.set(key, { principal, lastUsedAt });
    this.keyByTokenId.set(principal.tokenId!, key);
  }

  evictToken(tokenId: string): void {
    this.epoch++;
    const key = this.keyByTokenId.get(tokenId);
    if (key) this.entries.delete(key);
  }

  evictUser(userId: string): void {
    this.epoch++;
    for (const [key, entry] of this.entries.entries()) if (entry.principal.user.id === userId) this.entries.delete(key);
  }

  clear(): void {
    this.epoch++;
    this.entries.clear();
    this.keyByTokenId.clear();
  }
}
