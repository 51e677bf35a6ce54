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

/** How long a re-confirmation stands in for the password a change of how one signs in asks for (at most SUDO_SECONDS). */
export const RECONFIRMATION_SECONDS = 600;

/**
 * Whether the person re-confirmed who they are on the sudo page a moment ago (RECONFIRMATION_SECONDS,
 * or SUDO_SECONDS if shorter): what an account without a password gives where others type theirs
 * (a new address, a first password, a deletion). A sign-in is not enough: its sudo mode lasts
 * hours, and a provider may sign a person in without asking anything.
 *
 * @param reconfirmedAt the session's `reconfirmedAt`
 */
export function reconfirmedJustNow(reconfirmedAt: number | undefined, clock: Clock, config: Pick<AppConfig, 'sudoSeconds'>): boolean {
  return clock.now().getTime() - (reconfirmedAt ?? 0) < Math.min(RECONFIRMATION_SECONDS, config.sudoSeconds) * 1000;
}
