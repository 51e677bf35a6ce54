import type { AuthPrincipal } from './auth-principal.js';

/** The longest a cached verification is trusted, even if a revocation notice were lost. */
export const CACHE_MAX_AGE_MS = 30_000;
/** Bounded memory: about 0.5 KB an entry, so 50,000 entries stay under 25 MB. */
export const CACHE_MAX_ENTRIES = 50_000;

interface Entry {
  principal: AuthPrincipal;
  cachedAt: number;
  lastUsedAt: number | null;
}

/**
 * Verified tokens by the SHA-256 of the token (raw tokens are never kept).
 * Correct only while revocations reach it: the owner switches it off
 * (`enabled = false` flushes it) whenever its revocation listener is down.
 *
 * A verification read from the database before an eviction arrived must not be
 * cached after it: `epoch` moves on every eviction, and `set` refuses entries
 * whose read began in an older epoch.
 */
export class VerifiedTokenCache {
  private readonly entries = new Map<string, Entry>();
  private readonly keyByTokenId = new Map<string, string>();
  private active = false;
  epoch = 0;

  constructor(
    private readonly maxEntries = CACHE_MAX_ENTRIES,
    private readonly maxAgeMs = CACHE_MAX_AGE_MS,
  ) {}

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

  get(key: string, now: number): Entry | undefined {
    if (!this.active) return undefined;
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (now - entry.cachedAt >= this.maxAgeMs) {
      this.delete(key, entry);
      return undefined;
    }
    return entry;
  }

  set(key: string, principal: AuthPrincipal, lastUsedAt: number | null, now: number, readEpoch: number): void {
    if (!this.active || readEpoch !== this.epoch) return;
    if (this.entries.size >= this.maxEntries) {
      // Oldest first (Map keeps insertion order): cheap, and entries age out anyway.
      const oldest = this.entries.keys().next().value as string;
      this.delete(oldest, this.entries.get(oldest)!);
    }
    this.entries.set(key, { principal, cachedAt: now, lastUsedAt });
    this.keyByTokenId.set(principal.tokenId!, key);
  }

  evictToken(tokenId: string): void {
    this.epoch++;
    const key = this.keyByTokenId.get(tokenId);
    if (key) this.delete(key, this.entries.get(key));
  }

  evictUser(userId: string): void {
    this.epoch++;
    for (const [key, entry] of this.entries) if (entry.principal.user.id === userId) this.delete(key, entry);
  }

  clear(): void {
    this.epoch++;
    this.entries.clear();
    this.keyByTokenId.clear();
  }

  private delete(key: string, entry: Entry | undefined): void {
    this.entries.delete(key);
    if (entry) this.keyByTokenId.delete(entry.principal.tokenId!);
  }
}
