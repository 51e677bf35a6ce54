import type { SessionFile } from '@prospect/contract';
import { needsRefresh, refreshAheadMs } from '../src/session/refresh.js';

/** A refreshable session whose pair was obtained at 0 and lives `lifetimeS` seconds. */
const obtainedAtZero = (lifetimeS: number): SessionFile => ({
  accessToken: 'prs_x',
  refreshToken: 'prsr_x',
  apiBaseUrl: 'http://localhost:3000',
  user: { id: 'u1', email: 'ada@example.com', name: 'Ada' },
  createdAt: new Date(0).toISOString(),
  expiresAt: new Date(lifetimeS * 1000).toISOString(),
});

describe('the refresh margin scales with the access token lifetime', () => {
  it.each([
    [3600, 60_000],
    [240, 60_000],
    [120, 30_000],
    [40, 10_000],
    [4, 1_000],
  ])('a token of %i s is renewed %i ms before it expires: a quarter of its life, at most a minute', (lifetimeS, aheadMs) => {
    const session = obtainedAtZero(lifetimeS);
    expect(refreshAheadMs(session)).toBe(aheadMs);
    expect(needsRefresh(session, lifetimeS * 1000 - aheadMs - 1)).toBe(false);
    expect(needsRefresh(session, lifetimeS * 1000 - aheadMs)).toBe(true);
  });

  it('a 40 s token just renewed is not renewed again by the next command (a fixed minute would renew it every time)', () => {
    expect(needsRefresh(obtainedAtZero(40), 1_000)).toBe(false);
  });

  it('a clock that puts createdAt after expiresAt renews only once expired; no refresh token, never', () => {
    const skewed = { ...obtainedAtZero(40), createdAt: new Date(60_000).toISOString() };
    expect(refreshAheadMs(skewed)).toBe(0);
    expect(needsRefresh(skewed, 39_999)).toBe(false);
    expect(needsRefresh(skewed, 40_000)).toBe(true);
    const { refreshToken: _, ...longLived } = obtainedAtZero(40);
    expect(needsRefresh(longLived, 50_000)).toBe(false);
  });
});
