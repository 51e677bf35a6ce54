import type { AuthPrincipal } from './auth-principal.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

const principal = (tokenId: string, userId = 'u1'): AuthPrincipal => ({
  user: { id: userId, email: `${userId}@example.com`, name: userId, role: 'user' },
  tokenId,
  expiresAt: new Date(10_000_000),
  via: 'bearer',
  scopes: ['profile'],
});

describe('VerifiedTokenCache', () => {
  let now: number;
  let cache: VerifiedTokenCache;
  beforeEach(() => {
    now = 1_000_000;
    cache = new VerifiedTokenCache(() => now, 3, 1_000);
    cache.enabled = true;
  });

  it('returns what was cached, until it is older than the maximum age', () => {
    cache.set('k1', principal('t1'), null, cache.epoch);
    now += 1_000;
    expect(cache.get('k1')?.principal.tokenId).toBe('t1');
    now += 1;
    expect(cache.get('k1')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('keeps at most its bound, dropping the least recently used', () => {
    for (const id of ['a', 'b', 'c']) cache.set(id, principal(id), null, cache.epoch);
    cache.get('a'); // used: 'b' is now the least recently used
    cache.set('d', principal('d'), null, cache.epoch);
    expect(cache.size).toBe(3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBeDefined();
    expect(cache.get('d')).toBeDefined();
  });

  it('evicts by token and by user', () => {
    cache.set('k1', principal('t1', 'u1'), null, cache.epoch);
    cache.set('k2', principal('t2', 'u2'), null, cache.epoch);
    cache.set('k3', principal('t3', 'u2'), null, cache.epoch);
    cache.evictToken('t1');
    expect(cache.get('k1')).toBeUndefined();
    cache.evictUser('u2');
    expect(cache.size).toBe(0);
  });

  it('refuses a verification read before an eviction happened', () => {
    const readEpoch = cache.epoch;
    cache.evictToken('t1'); // arrives while the database read is in flight
    cache.set('k1', principal('t1'), null, readEpoch);
    expect(cache.get('k1')).toBeUndefined();
  });

  it('holds nothing while disabled, and starts empty when enabled again', () => {
    cache.set('k1', principal('t1'), null, cache.epoch);
    cache.enabled = false;
    expect(cache.get('k1')).toBeUndefined();
    cache.set('k1', principal('t1'), null, cache.epoch);
    cache.enabled = true;
    expect(cache.size).toBe(0);
  });
});
