import type { Clock } from '../common/clock.js';
import type { AppConfig } from '../config/app-config.js';

/**
 * Sudo mode: the one rule for "has this browser proven who it is recently enough?", asked by the
 * pages (web/page-guards.ts: approving, tokens, security settings) and by the token endpoint when
 * a signed-in browser calls it (cli-auth/token-issuance.service.ts), so the two never drift apart.
 *
 * It lasts SUDO_SECONDS from the session's last proof (the sign-in, or a re-confirmation); a
 * session that never proved anything (no time recorded) is not in sudo mode.
 *
 * @param confirmedAt the last proof, in ms since the epoch (the session's `sudoAt`, the principal's `confirmedAt`)
 */
export function inSudoMode(confirmedAt: number | undefined, clock: Clock, config: Pick<AppConfig, 'sudoSeconds'>): boolean {
  return clock.now().getTime() - (confirmedAt ?? 0) < config.sudoSeconds * 1000;
}
