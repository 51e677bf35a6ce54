import type { AuthPrincipal } from './auth-principal.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

const principal = (tokenId: string, userId = 'u1'): AuthPrincipal => ({
  user: { id: userId, email: `${userId}@example.com`, name: userId, role: 'user' },
  tokenId,
  expiresAt: new Date(10_000_000),
  via: 'bearer',
});

describe('VerifiedTokenCache', () => {
  let cache: VerifiedTokenCache;
  beforeEach(() => {
    cache = new VerifiedTokenCache(3, 1_000);
    cache.enabled = true;
  });

  it('returns what was cached, until it is older than the maximum age', () => {
    cache.set('k1', principal('t1'), null, 0, cache.epoch);
    expect(cache.get('k1', 999)?.principal.tokenId).toBe('t1');
    expect(cache.get('k1', 1_000)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('keeps at most its bound, dropping the oldest', () => {
    for (const id of ['a', 'b', 'c', 'd']) cache.set(id, principal(id), null, 0, cache.epoch);
    expect(cache.size).toBe(3);
    expect(cache.get('a', 0)).toBeUndefined();
    expect(cache.get('d', 0)).toBeDefined();
  });

  it('evicts by token and by user', () => {
    cache.set('k1', principal('t1', 'u1'), null, 0, cache.epoch);
    cache.set('k2', principal('t2', 'u2'), null, 0, cache.epoch);
    cache.set('k3', principal('t3', 'u2'), null, 0, cache.epoch);
    cache.evictToken('t1');
    expect(cache.get('k1', 0)).toBeUndefined();
    cache.evictUser('u2');
    expect(cache.size).toBe(0);
  });

  it('refuses a verification read before an eviction happened', () => {
    const readEpoch = cache.epoch;
    cache.evictToken('t1'); // arrives while the database read is in flight
    cache.set('k1', principal('t1'), null, 0, readEpoch);
    expect(cache.get('k1', 0)).toBeUndefined();
  });

  it('holds nothing while disabled, and starts empty when enabled again', () => {
    cache.set('k1', principal('t1'), null, 0, cache.epoch);
    cache.enabled = false;
    expect(cache.get('k1', 0)).toBeUndefined();
    cache.set('k1', principal('t1'), null, 0, cache.epoch);
    cache.enabled = true;
    expect(cache.size).toBe(0);
  });
});
