import { Injectable } from '@nestjs/common';
import { ERROR_CODES } from '@prospect/contract';
import type { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiException } from '../common/api-exception.js';
import { sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import type { DatabaseDeadline } from '../database/database-deadline.js';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';
import { Metrics } from '../metrics/metrics.js';
import { normalizeEmail } from '../users/users.service.js';
import type { LeasedLimiter } from './leased-limiter.js';
import { LOGIN_FAILURES, RateLimiters } from './rate-limiters.js';
import { RateLimitsRepository } from './rate-limits.repository.js';

/** The key of an account's counter: the SHA-256 of its normalized e-mail, so the table holds no address (or a password typed into the wrong field). */
export const accountKey = (email: string) => sha256(email).toString('base64url');

/**
 * A browser proven to be the account owner's by something that knowing (or guessing) the password
 * does not give: a genuine device cookie for the account, or a fully signed-in session of it. Only
 * web/device-cookies.ts makes one (it says why those two). Its failures are counted under its own
 * key and never against the account, so nobody else's failures can block it, and its own block
 * only itself.
 */
export type RecognisedBrowser = string & { readonly __recognisedBrowser: true };

/** A limited request: answered 429 with Retry-After (the JSON body on the API, a page on the web). */
export class TooManyRequests extends ApiException {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(429, ERROR_CODES.tooManyRequests, message, { 'Retry-After': String(retryAfterSeconds) });
  }
}

/** User codes a person, and an address, may look up in a minute (a right one gives its point back). */
export const USER_CODE_TRIES_PER_MINUTE = 5;
/** Password-reset mails one account may be sent in an hour (PASSWORD_RESETS_PER_IP_PER_HOUR sets the address's). */
export const RESETS_PER_ACCOUNT_PER_HOUR = 3;
/** Mails proving an address (verification sent again, a new address) one account may ask for in an hour; the one sent at sign-up is not counted. */
export const VERIFICATION_MAILS_PER_HOUR = 3;
/** Unsolicited mails (mailToRecipient) one address may be sent in an hour, whoever asks. */
export const MAILS_PER_RECIPIENT_PER_HOUR = 10;
/** Invitations one organization may send in an hour, whoever of its admins sends them (re-invitations count too). */
export const INVITATIONS_PER_ORGANIZATION_PER_HOUR = 30;
/** Domain verifications (DNS lookups) one organization may ask for in an hour (issue #44). */
export const DOMAIN_VERIFICATIONS_PER_HOUR = 20;
/** Discoveries of an organization's identity provider ("Test connection", registration: requests to the issuer it names) one organization may ask for in an hour. */
export const PROVIDER_DISCOVERIES_PER_HOUR = 20;
/** Failed client authentications (issue #45: a service account's secret, assertion or CI token) one address may make in an hour, whichever client_id it names. */
export const CLIENT_AUTH_FAILURES_PER_IP_PER_HOUR = 100;
/** Failed SCIM bearer tokens (issue #47: a directory's token, wrong or ended) one address may send to one organization's endpoint in an hour. */
export const SCIM_TOKEN_FAILURES_PER_IP_PER_HOUR = 30;
/** Failed passkey sign-ins with one credential id before it waits, as an account's failed sign-ins. */
export const PASSKEY_FAILURES = LOGIN_FAILURES;

/**
 * Limits on whatever a person can guess or an anonymous client can create, with their
 * counters in Postgres (rate-limiter-flexible's Postgres store, table `rate_limits`), so
 * every replica enforces the same limits.
 *
 * The owner is never the one locked out (issue #31): every password check (sign-in, sudo, password
 * and address change, deletion), every second-factor code and every passkey sign-in made from the
 * owner's recognised browser (RecognisedBrowser: a device cookie for the account at /login and its
 * second step, the signed-in session itself everywhere else) is counted per browser alone: 5
 * failures in 15 minutes block that browser for 15 minutes, and nothing else counts. Everyone
 * else is counted per account (and per address), as below, and only they are blocked by it.
 *
 * - Passwords without a recognised browser, per account (the normalized e-mail, known or not, so
 *   the answer tells nothing): 5 failures in 15 minutes block the account's sign-in from unknown
 *   browsers for 15 minutes, the next block that day 30, then an hour, and so on up to a
 *   day; a success clears the failures; an admin can clear a block. Per IP:
 *   SIGNIN_PER_IP_PER_HOUR failed sign-ins an hour (a success gives its point back).
 * - Passkey sign-in without a recognised browser: 5 failures in 15 minutes per registered credential
 *   id block it for 15 minutes, and each try uses a point of the address's SIGNIN_PER_IP_PER_HOUR
 *   (a success gives it back).
 * - SAML responses posted to an organization's ACS: each a point of the address's
 *   SIGNIN_PER_IP_PER_HOUR, taken before the XML is read (a verified one gives it back).
 * - Password-reset mails: 3 an hour per account (known or not), PASSWORD_RESETS_PER_IP_PER_HOUR per IP.
 *   Mails proving an address (verification sent again, an address change): 3 an hour per account.
 *   Unsolicited mails to one address: MAILS_PER_RECIPIENT_PER_HOUR, the rest dropped (mailToRecipient).
 * - Organization invitations: INVITATIONS_PER_ORGANIZATION_PER_HOUR per organization, and each a
 *   point of the recipient's MAILS_PER_RECIPIENT_PER_HOUR (refused, not dropped: the inviter is told).
 *   Domain verifications: DOMAIN_VERIFICATIONS_PER_HOUR per organization; discoveries of its
 *   identity providers (Test connection, registration): PROVIDER_DISCOVERIES_PER_HOUR per organization.
 * - SCIM bearer tokens (issue #47): SCIM_TOKEN_FAILURES_PER_IP_PER_HOUR failed ones per address and
 *   organization, counted before the lookup (a working token gives its point back).
 * - Second-factor codes (TOTP or recovery) without a recognised browser, per account: 5 failures in
 *   15 minutes block it for 15 minutes (a million six-digit codes: guessing one takes years); a
 *   right code gives them back. The first code of an app being set up: 5 failures per account
 *   in their own counter, so they neither block nor are blocked by sign-in codes.
 * - Sign-up: SIGNUP_PER_IP_PER_HOUR per IP. Device-login start: DEVICE_START_PER_IP_PER_MINUTE per IP,
 *   the one limit on a hot path, claimed in batches (LeasedLimiter, startPrefetch).
 * - User codes typed on the approval page (lookup, Approve, Deny): 5 a minute per person and
 *   per IP, each counted before the code is looked up; a code that exists gives its point back.
 *
 * Every limit is taken before the work it guards, in one atomic upsert per counter, so any
 * number of parallel requests get no more tries than the same requests one after another. A
 * request under two limits takes the address's point first and the account's (or person's) only
 * if that was given (RateLimiters.takeInTurn): an address already refused cannot spend anyone's
 * tries, and parallel requests from one person on one address get exactly the limit, not fewer.
 */
@Injectable()
export class RateLimits {
  /** The counter behind each limit (rate-limiters.ts), made with the sizes declared above. */
  private readonly limiters: RateLimiters;

  constructor(
    sql: Sql,
    config: AppConfig,
    metrics: Metrics,
    private readonly counters: RateLimitsRepository,
  ) {
    this.limiters = new RateLimiters(sql, config, metrics, {
      userCodeTriesPerMinute: USER_CODE_TRIES_PER_MINUTE,
      resetsPerAccountPerHour: RESETS_PER_ACCOUNT_PER_HOUR,
      verificationMailsPerHour: VERIFICATION_MAILS_PER_HOUR,
      mailsPerRecipientPerHour: MAILS_PER_RECIPIENT_PER_HOUR,
      invitationsPerOrganizationPerHour: INVITATIONS_PER_ORGANIZATION_PER_HOUR,
      passkeyFailures: PASSKEY_FAILURES,
      startPrefetch: startPrefetch(config.deviceStartPerIpPerMinute),
      domainVerificationsPerHour: DOMAIN_VERIFICATIONS_PER_HOUR,
      providerDiscoveriesPerHour: PROVIDER_DISCOVERIES_PER_HOUR,
      clientAuthFailuresPerIp: CLIENT_AUTH_FAILURES_PER_IP_PER_HOUR,
      scimTokenFailuresPerIp: SCIM_TOKEN_FAILURES_PER_IP_PER_HOUR,
    });
  }

  /**
   * Counts a password attempt (a sign-in, or a signed-in person's password check) before the
   * password is checked, so parallel requests cannot all pass a check made before any of them is
   * counted. From the owner's recognised browser it uses a point of that browser alone. Otherwise
   * it uses a point of the address, then of the account, and is refused once either has none left;
   * the attempt that uses up an account's points blocks it, each block within a day twice as long
   * as the one before (15 min, 30 min, 1 h, … at most a day). A success gives the points back.
   */
  async attemptSignIn(email: string, ip: string, browser: RecognisedBrowser | null): Promise<void> {
    if (browser) return this.consume(this.limiters.loginByBrowser, browser, 'Too many failed sign-ins. Please wait before trying again.');
    const account = accountKey(email);
    const { taken, refused } = await this.limiters.takeInTurn([
      [this.limiters.loginByIp, ip],
      [this.limiters.loginByAccount, account],
    ]);
    // This attempt used the account's last point: whatever its password, the next ones wait.
    if (taken[1]?.remainingPoints === 0) await this.limiters.blockAccount(account);
    if (refused) throw tooMany('Too many failed sign-ins. Please wait before trying again.', refused);
  }

  /** A right password: its attempt is given back where it was counted (a recognised browser's success leaves the account's counter to whoever filled it). */
  async signInSucceeded(email: string, ip: string, browser: RecognisedBrowser | null): Promise<void> {
    if (browser) await this.limiters.loginByBrowser.delete(browser);
    else await Promise.all([this.limiters.loginByAccount.delete(accountKey(email)), this.limiters.loginByIp.reward(ip, 1)]);
  }

  /**
   * Counts a second-factor code (TOTP or recovery) before it is checked: from the owner's
   * recognised browser against that browser, otherwise against the account, so people who know
   * the password and guess codes block only browsers the owner never signed in with.
   */
  attemptSecondFactor(userId: string, browser: RecognisedBrowser | null): Promise<void> {
    if (browser) return this.consume(this.limiters.secondFactorsByBrowser, browser, 'Too many wrong codes. Please wait 15 minutes before trying again.');
    return this.consume(
      this.limiters.secondFactors,
      userId,
      'Too many wrong codes. Please wait 15 minutes before trying again, or sign in from a browser you have signed in with since the account last changed.',
    );
  }

  /** A right code: its attempts are given back where they were counted (a recognised browser's success leaves the account's counter to whoever filled it). */
  async secondFactorSucceeded(userId: string, browser: RecognisedBrowser | null): Promise<void> {
    await (browser ? this.limiters.secondFactorsByBrowser.delete(browser) : this.limiters.secondFactors.delete(userId));
  }

  /** Counts the first code of an app being set up (a signed-in person), before it is checked: a counter of its own, apart from sign-in codes. */
  attemptEnrolmentCode(userId: string): Promise<void> {
    return this.consume(this.limiters.enrolmentCodes, userId, 'Too many wrong codes. Please wait 15 minutes before trying again.');
  }

  async enrolmentCodeSucceeded(userId: string): Promise<void> {
    await this.limiters.enrolmentCodes.delete(userId);
  }

  /**
   * Counts a passkey sign-in (alone, or as the second step) before its assertion is verified:
   * from the owner's recognised browser against that browser (with its failed passwords), else
   * against the passkey's credential id (hashed: the table keeps no identifier) and the address's
   * failed sign-ins. A credential id registered nowhere (`credentialId` null) uses only the
   * address's: counting it would store a row per made-up id and stop nothing. So a flood of fake
   * assertions costs one or two counter updates each, and no more than the limits are ever
   * verified (or audited).
   */
  async attemptPasskey(credentialId: string | null, ip: string, browser: RecognisedBrowser | null): Promise<void> {
    if (browser) return this.consume(this.limiters.loginByBrowser, browser, 'Too many failed sign-ins. Please wait before trying again.');
    const byIp = [this.limiters.loginByIp, ip] as const;
    const { refused } = await this.limiters.takeInTurn(credentialId === null ? [byIp] : [byIp, [this.limiters.passkeysByCredential, credentialKey(credentialId)]]);
    if (refused) throw tooMany('Too many failed sign-ins with this passkey or from your address. Please wait before trying again.', refused);
  }

  /** A passkey that verified: its attempt is given back where it was counted. */
  async passkeySucceeded(credentialId: string, ip: string, browser: RecognisedBrowser | null): Promise<void> {
    if (browser) await this.limiters.loginByBrowser.delete(browser);
    else await Promise.all([this.limiters.passkeysByCredential.delete(credentialKey(credentialId)), this.limiters.loginByIp.reward(ip, 1)]);
  }

  /**
   * Counts a SAML response posted to an organization's ACS (issue #47) against its address, before
   * its XML is parsed or its signature verified (the expensive part, and anyone may post one): a
   * point of the address's SIGNIN_PER_IP_PER_HOUR failed sign-ins, which passwords and passkeys
   * use too, so one address gets no more tries for having several doors. A verified answer gives
   * it back (samlResponseVerified), so the limit counts failures. Per address alone: nothing names
   * an account before the signature is verified, and no recognised browser can be told there (the
   * device cookie goes only to /login, and the IdP's cross-site POST brings no session cookie), so
   * an attacker's failures block only their address, never the owner's account.
   */
  attemptSamlResponse(ip: string): Promise<void> {
    return this.consume(this.limiters.loginByIp, ip, 'Too many failed sign-ins from your address. Please wait before trying again.');
  }

  /** A SAML response that verified: its point goes back where attemptSamlResponse took it. */
  async samlResponseVerified(ip: string): Promise<void> {
    await this.limiters.loginByIp.reward(ip, 1);
  }

  /**
   * Whether one more unsolicited mail may go to `address` this hour (MAILS_PER_RECIPIENT_PER_HOUR,
   * counted per normalized address, hashed as accountKey does, known or not, one atomic upsert per
   * call): true takes one. False: the caller drops the mail without a word to whoever caused it
   * (the answer must not differ), and the refusal is counted in prospect_rate_limit_refusals_total
   * {limit="mail:recipient"}. Any other failure (the database) is thrown.
   *
   * For mails someone else can make the service send to an address (someone tried to sign up, a
   * verification link, a new address's link, an invitation), never for notices about what
   * happened to the recipient's own account (password changed, address changed, recovery code
   * used): whoever fills the budget must not silence those.
   */
  async mailToRecipient(address: string): Promise<boolean> {
    const { mailsByRecipient } = this.limiters;
    return (await this.limiters.refusal(mailsByRecipient, () => mailsByRecipient.consume(accountKey(normalizeEmail(address))))) === undefined;
  }

  /** An admin lifts an account's sign-in block (and forgets its earlier blocks); true when there was one. */
  async clearSignInBlock(email: string): Promise<boolean> {
    const account = accountKey(email);
    const failures = (await this.limiters.loginByAccount.get(account))?.consumedPoints ?? 0;
    await Promise.all([this.limiters.loginByAccount.delete(account), this.limiters.loginBlocksByAccount.delete(account)]);
    return failures > 0;
  }

  signUp(ip: string): Promise<void> {
    return this.consume(this.limiters.signupByIp, ip, 'Too many new accounts from your address. Please try again later.');
  }

  /**
   * Counts a device-login start. `deadline` is the request's whole budget for the database (the
   * insert that follows spends what this wait leaves); without one, DATABASE_TIMEOUT_MS from now.
   * Past it, DatabaseDeadlineExceeded (a 503), however long the claim it waits for takes.
   */
  async deviceStart(ip: string, deadline?: DatabaseDeadline): Promise<void> {
    const { startByIp } = this.limiters;
    const refused = await this.limiters.refusal(startByIp, () => startByIp.consume(ip, deadline));
    if (refused) throw tooMany('Too many device logins started from your address. Please wait a minute.', refused);
  }

  /**
   * Counts one user code a signed-in person typed (or sent with Approve or Deny) before it is
   * looked up, against the person and the address: a right code waits too once either is
   * used up, so guessing cannot tell. Call userCodeFound when the code turned out to exist.
   */
  async attemptUserCode(userId: string, ip: string): Promise<void> {
    const { refused } = await this.limiters.takeInTurn([
      [this.limiters.userCodesByIp, ip],
      [this.limiters.userCodesByUser, userId],
    ]);
    if (refused) throw tooMany('Too many wrong codes. Please wait a minute before trying again.', refused);
  }

  /** A code that exists is no guess: its point goes back, so a person approving their logins never runs out. */
  async userCodeFound(userId: string, ip: string): Promise<void> {
    await Promise.all([this.limiters.userCodesByUser.reward(userId, 1), this.limiters.userCodesByIp.reward(ip, 1)]);
  }

  /**
   * Counts a password-reset request against the address and the account (the normalized
   * e-mail, known or not: the answer tells nothing) before anything is looked up.
   */
  async requestPasswordReset(email: string, ip: string): Promise<void> {
    const { refused } = await this.limiters.takeInTurn([
      [this.limiters.resetsByIp, ip],
      [this.limiters.resetsByAccount, accountKey(email)],
    ]);
    if (refused) throw tooMany('Too many password reset requests. Please wait before asking again.', refused);
  }

  /** Counts a request for a mail that proves an address (the verification link again, or a new address's link), per account, before it is sent. */
  requestAddressMail(userId: string): Promise<void> {
    return this.consume(this.limiters.verificationMails, userId, 'Too many confirmation mails. Please wait before asking for another.');
  }

  /** A mail counted by requestAddressMail could not be queued (the database refused it): its point goes back, so the limit counts mails sent. */
  async addressMailNotQueued(userId: string): Promise<void> {
    await this.limiters.verificationMails.reward(userId, 1);
  }

  /**
   * Counts an invitation an organization sends (INVITATIONS_PER_ORGANIZATION_PER_HOUR, per
   * organization), before it is made: anyone may create an organization, so this and the
   * recipient's own limit (mailToRecipient) keep one from becoming a way to mail strangers.
   */
  sendOrganizationInvitation(organizationId: string): Promise<void> {
    return this.consume(
      this.limiters.invitationsByOrganization,
      organizationId,
      `This organization has sent ${INVITATIONS_PER_ORGANIZATION_PER_HOUR} invitations in the last hour, the most it may: please wait before inviting more.`,
    );
  }

  /** An invitation counted by sendOrganizationInvitation was not made (refused, or the database failed): its point goes back, so the limit counts invitations sent. */
  async organizationInvitationNotSent(organizationId: string): Promise<void> {
    await this.limiters.invitationsByOrganization.reward(organizationId, 1);
  }

  /**
   * Counts a domain verification of an organization (issue #44) before its DNS lookup, per
   * organization, whether it succeeds or not: each one sends queries to the domain's name servers
   * on the organization's say-so, so a script cannot make the service a DNS hammer.
   */
  attemptDomainVerification(organizationId: string): Promise<void> {
    return this.consume(this.limiters.domainVerifications, organizationId, `Too many domain verifications for this organization (${DOMAIN_VERIFICATIONS_PER_HOUR} an hour). Please wait before trying again.`);
  }

  /**
   * Counts a discovery of an organization's identity provider (its "Test connection", or its
   * registration) before the request to the issuer goes out: an organization's admins choose the
   * issuer, and each discovery is an outbound request this server makes for them.
   */
  attemptProviderDiscovery(organizationId: string): Promise<void> {
    return this.consume(
      this.limiters.providerDiscoveries,
      organizationId,
      `Too many identity-provider connection tests and registrations for this organization (${PROVIDER_DISCOVERIES_PER_HOUR} an hour). Please wait before trying again.`,
    );
  }

  /**
   * Counts a client authentication at the token endpoint (issue #45: a service account's secret,
   * signed assertion or CI token to exchange) against its address before it is checked; a success
   * gives the point back (clientAuthenticationSucceeded), so the limit counts failures. Not per
   * client_id: a secret of 256 random bits, a private key's signature or an issuer's signature is
   * not guessed by any number of tries, and client IDs are public (they sit in CI workflow files),
   * so a counter per client would only let anyone lock a team's CI out. Per address, it stops the
   * hammering.
   */
  async attemptClientAuthentication(ip: string): Promise<void> {
    return this.consume(this.limiters.clientAuthByIp, ip, 'Too many failed client authentications from your address. Please wait before trying again.');
  }

  /** The authentication counted by attemptClientAuthentication succeeded: its point goes back. */
  async clientAuthenticationSucceeded(ip: string): Promise<void> {
    await this.limiters.clientAuthByIp.reward(ip, 1);
  }

  /**
   * Counts a SCIM request's bearer token (issue #47) against its address at that organization's
   * endpoint before the token is looked up; a token that works gives the point back
   * (scimTokenSucceeded), so the limit counts failures. Keyed by address and organization: a
   * directory's requests come from its vendor's few shared addresses (Okta's, Entra's), so a counter
   * per address alone would let one tenant's wrong token block every organization's provisioning
   * from that vendor, and one per organization alone would let anyone block an organization's
   * directory. A token of 256 random bits is not guessed anyway: this stops the hammering.
   */
  async attemptScimToken(slug: string, ip: string): Promise<void> {
    return this.consume(this.limiters.scimTokensByIp, scimKey(slug, ip), 'Too many failed SCIM tokens from your address for this organization. Please wait before trying again.');
  }

  /** The token counted by attemptScimToken worked: its point goes back. */
  async scimTokenSucceeded(slug: string, ip: string): Promise<void> {
    await this.limiters.scimTokensByIp.reward(scimKey(slug, ip), 1);
  }

  /** At most `limit` counters past their window, in `tx` (retention); how many. */
  purgeExpired(tx: Tx, now: Date, limit: number): Promise<number> {
    return this.counters.deleteExpired(tx, now, limit);
  }

  private async consume(limiter: RateLimiterPostgres | LeasedLimiter, key: string, message: string): Promise<void> {
    const refused = await this.limiters.refusal(limiter, () => limiter.consume(key));
    if (refused) throw tooMany(message, refused);
  }
}

/** The key of a SCIM token counter: the organization's slug and the address. */
const scimKey = (slug: string, ip: string) => `${slug} ${ip}`;

/**
 * Start points a replica claims beyond the requests waiting for them: a 32nd of the limit, at most
 * 64. The default limit (30) gets none, so its count is exact; a limit raised for a busy proxy
 * (or a bench) makes one claim per 65 starts, and a key may then be refused at most 64 starts per
 * replica short of its limit (points claimed and not used before the minute ended).
 */
export function startPrefetch(limit: number): number {
  return Math.min(64, Math.floor(limit / 32));
}

/** A passkey's counter key: credential ids are long and name a person's authenticator; the table keeps their hash. */
const credentialKey = (credentialId: string) => sha256(credentialId).toString('base64url');

function tooMany(message: string, refused: RateLimiterRes): TooManyRequests {
  return new TooManyRequests(message, Math.max(1, Math.ceil(refused.msBeforeNext / 1000)));
}
