/**
 * What a provider's claims say about the person, read the one way Prospect trusts.
 */

/**
 * Whether the provider vouches that the address is the person's: `email_verified` is the JSON
 * `true` (a string "true", or nothing, is not). One exception, for Microsoft Entra ID, which never
 * sends `email_verified` for work accounts: its documented optional claim `xms_edov` ("email domain
 * owner verified", added in the app registration's Token configuration) counts when it is `true`
 * and the token says nothing of `email_verified`, for issuers of login.microsoftonline.com only.
 */
export function addressVerified(claims: Record<string, unknown>, issuer: string): boolean {
  if (claims.email_verified !== undefined) return claims.email_verified === true;
  return URL.canParse(issuer) && new URL(issuer).hostname === 'login.microsoftonline.com' && claims.xms_edov === true;
}

/**
 * Whether a provider's id_token shows that the person used a second factor there, which then
 * stands for Prospect's own (REQUIRE_SECOND_FACTOR; an account's authenticator app or passkey).
 *
 * `amr` (RFC 8176): `mfa` says so outright (Microsoft Entra ID, Okta); otherwise two different
 * methods of RFC 8176's registry, at least one of them not something the person knows (`pwd`,
 * `kba`, `pin`) — a password and a code (`pwd` + `otp`), a key and a fingerprint (`hwk` + `fpt`).
 * `acr` counts only when it is exactly one of the values the provider's configuration names
 * (`mfaAcrValues`): an `acr` is the provider's own vocabulary, and reading words into it would
 * take `urn:acme:loa:no-mfa` or `skip_2fa` for a second factor (issue #43, finding 2). A
 * provider that shows neither (Google) has not shown a second factor, and Prospect asks for its own.
 */
const KNOWLEDGE = new Set(['pwd', 'kba', 'pin']);
const OTHER_FACTORS = new Set(['otp', 'hwk', 'swk', 'sms', 'tel', 'fpt', 'face', 'iris', 'retina', 'vbm', 'sc', 'pop']);

export function showsSecondFactor(amr: readonly string[], acr: string | undefined, mfaAcrValues: readonly string[]): boolean {
  if (amr.includes('mfa')) return true;
  const methods = new Set(amr.filter((m) => KNOWLEDGE.has(m) || OTHER_FACTORS.has(m)));
  if (methods.size >= 2 && [...methods].some((m) => OTHER_FACTORS.has(m))) return true;
  return acr !== undefined && mfaAcrValues.includes(acr);
}
