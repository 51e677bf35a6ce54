import type { Request } from 'express';

/**
 * How a browser session proved its person, recorded at the moment of each proof (a sign-in, a
 * re-confirmation, a factor set up) rather than reconstructed later: the `amr` (RFC 8176) and
 * `auth_time` an authorization code carries, and whether a second factor was shown, which a grant
 * approved in the session keeps (grants/grant-rules.ts: REQUIRE_SECOND_FACTOR holds at every refresh).
 */

/** A sign-in's second step: Prospect's own factor, or the provider's amr/acr showing one. */
export type SignInFactor = 'totp' | 'recovery-code' | 'passkey' | 'provider' | null;

/** The amr of a sign-in: with a password, or through an identity provider (`federated`, which never shows Prospect a password). */
export function amrOfSignIn(factor: SignInFactor, federated: boolean): string[] {
  const own = factor === 'passkey' ? ['hwk'] : factor === 'totp' || factor === 'recovery-code' ? ['otp'] : [];
  if (federated) return own.length || factor === 'provider' ? [...own, 'mfa'] : [];
  // A passkey signs in alone (the sign-in page's passkey button) or after the password: both prove possession of the key.
  if (factor === 'passkey') return ['hwk'];
  return own.length ? ['pwd', ...own, 'mfa'] : ['pwd'];
}

/** Whether an amr shows a factor beyond a secret known (an app's code, a key, the provider's word). */
export const showsSecondFactor = (amr: readonly string[]): boolean => amr.some((method) => method === 'mfa' || method === 'otp' || method === 'hwk');

/** Records a sign-in's proof in its new session (WebSessions.startSignedInSession calls it). */
export function recordSignInProof(req: Request, amr: string[]): void {
  req.session.proofAmr = amr;
  req.session.secondFactorShown = showsSecondFactor(amr);
}

/** Records a re-confirmation (sudo): the session's newest proof, and a second factor if it was one. */
export function recordReconfirmation(req: Request, amr: string[]): void {
  req.session.proofAmr = amr;
  if (showsSecondFactor(amr)) req.session.secondFactorShown = true;
}

/** A factor just set up in the session (its first code or key checked): it has shown a second factor now. */
export function recordEnrolledFactor(req: Request): void {
  req.session.secondFactorShown = true;
}

/**
 * When the session last proved its person (a re-confirmation, else its sign-in), in ms; `now` for
 * a session from before that record. The `auth_time` a grant approved in it keeps.
 */
export function provenAt(req: Request, now: number): number {
  return req.session.sudoAt ?? req.session.signedInAt ?? now;
}
