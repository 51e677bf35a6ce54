import { utcMinute } from '@prospect/contract';
/** "expires 2026-12-23 10:00 UTC (in 29 days)" / "expired … (3 hours ago)". */
export function describeExpiry(expiresAt: string, now = Date.now()): string {
  return `${Date.parse(expiresAt) > now ? 'expires' : 'expired'} ${expiryMoment(expiresAt, now)}`;
}

/** "2026-12-23 10:00 UTC (in 29 days)" / "2026-12-23 10:00 UTC (expired 3 hours ago)". */
export function expiryMoment(expiresAt: string, now = Date.now()): string {
  const at = Date.parse(expiresAt);
  const when = utcMinute(at);
  const delta = at - now;
  return delta > 0 ? `${when} (in ${humanDuration(delta)})` : `${when} (${humanDuration(-delta)} ago)`;
}

export function humanDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 90) return `${s} second${s === 1 ? '' : 's'}`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} minutes`;
  const h = Math.round(m / 60);
  if (h < 36) return `${h} hours`;
  return `${Math.round(h / 24)} days`;
}

/** 9:05 — time left on a countdown. */
export function clock(msLeft: number): string {
  const s = Math.max(0, Math.ceil(msLeft / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}
