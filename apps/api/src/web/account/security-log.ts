import type { AuthEventType } from '../../audit/auth-event.entity.js';

/** Each event of a person's own security log, in words; events not listed here are not shown. */
const WORDS: Partial<Record<AuthEventType, string>> = {
  'web.login': 'Signed in',
  'web.login_failed': 'Failed sign-in',
  'web.logout': 'Signed out',
  'web.logout_everywhere': 'Signed out everywhere',
  'web.signup': 'Created the account',
  'web.sudo': 'Confirmed it was you',
  'device.approve': 'Approved a device sign-in',
  'oauth.consent': 'Allowed an app to sign in as you',
  'oauth.consent_revoke': 'Disconnected an app',
  'oauth.code_exchange': 'An app you allowed received its token',
  'oauth.code_replay': 'An app’s sign-in code came back a second time: what it gave was revoked',
  'device.deny': 'Denied a device sign-in',
  'device.redeem': 'A device sign-in received its token',
  'token.issue': 'Created a token',
  'token.revoke': 'Revoked a token',
  'token.revoke_family': 'Ended a CLI session',
  'token.reuse': 'A used refresh token came back: its session was ended',
  'password.change': 'Changed the password',
  'password.reset_request': 'Asked for a password reset',
  'password.reset': 'Reset the password',
  'account.rename': 'Changed the name',
  'account.email_change': 'Changed the e-mail address',
  'account.ownership_proven': 'Proved the address with a reset link: every earlier session, second factor and token of the account was ended',
  'email.verify': 'Confirmed the e-mail address',
  'account.invitation_accept': 'Accepted the invitation',
  'factor.totp_add': 'Set up an authenticator app',
  'factor.totp_remove': 'Removed the authenticator app',
  'factor.recovery_codes_new': 'Made new recovery codes',
  'factor.recovery_code_used': 'Used a recovery code',
  'factor.passkey_add': 'Added a passkey',
  'factor.passkey_remove': 'Removed a passkey',
  'federation.login': 'Signed in through an identity provider',
  'federation.login_refused': 'Sign-in through an identity provider refused',
  'federation.signup': 'Created the account through an identity provider',
  'federation.link': 'Linked an identity provider to the account',
  'federation.unlink': 'Unlinked an identity provider',
  'federation.refused_by_provider': 'The identity provider no longer accepts you: the sessions started through it were ended',
};

/** Shown types, for the query. */
export const SECURITY_LOG_TYPES = Object.keys(WORDS) as AuthEventType[];

/** One line of the log: what, and the detail worth showing (the browser of a sign-in, why one failed). */
export function describeEvent(event: { type: AuthEventType; detail: Record<string, unknown> }): { what: string; detail?: string } {
  const what = WORDS[event.type] ?? event.type;
  const detail = event.detail;
  const parts = [
    typeof detail.reason === 'string' ? detail.reason : undefined,
    { totp: 'with the app', 'recovery-code': 'with a recovery code', passkey: 'with a passkey' }[String(detail.secondFactor)],
    typeof detail.browser === 'string' ? browserName(detail.browser) : undefined,
    typeof detail.label === 'string' ? `“${detail.label}”` : undefined,
  ].filter(Boolean);
  return { what, detail: parts.length ? parts.join(' · ') : undefined };
}

/** Browsers by their User-Agent token, most specific first (Edge says Chrome too, Chrome says Safari). */
const BROWSERS: ReadonlyArray<[string, RegExp]> = [
  ['Edge', /\bEdg\/(\d+)/],
  ['Firefox', /\bFirefox\/(\d+)/],
  ['Chrome', /\b(?:Headless)?Chrome\/(\d+)/],
  ['Safari', /\bVersion\/(\d+)\S* (?:Mobile\/\S+ )?Safari\//],
];
/** Android and iOS before Linux and macOS, which their agents also name. */
const SYSTEMS: ReadonlyArray<[string, RegExp]> = [
  ['Android', /Android/],
  ['iOS', /iPhone|iPad/],
  ['macOS', /Mac OS X/],
  ['Windows', /Windows/],
  ['Linux', /Linux/],
];

/**
 * "Chrome 156 on Linux" from a User-Agent header, for people reading their log (the audit row
 * keeps the header). A few patterns by hand: a parser library would be a dependency for one line
 * of a page; an agent none of them knows is shown as it came, cut short.
 */
export function browserName(userAgent: string): string {
  const browser = BROWSERS.map(([name, pattern]) => [name, pattern.exec(userAgent)?.[1]] as const).find(([, version]) => version !== undefined);
  if (!browser) return userAgent.length > 60 ? `${userAgent.slice(0, 57)}…` : userAgent;
  const system = SYSTEMS.find(([, pattern]) => pattern.test(userAgent))?.[0];
  return `${browser[0]} ${browser[1]}${system ? ` on ${system}` : ''}`;
}
