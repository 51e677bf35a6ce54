import { Injectable } from '@nestjs/common';
import { ERROR_CODES } from '@prospect/contract';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiException } from '../common/api-exception.js';
import { sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { Sql } from '../database/sql.js';
import { Metrics } from '../metrics/metrics.js';
import { LeasedLimiter } from './leased-limiter.js';

/** The key of an account's counter: the SHA-256 of its normalized e-mail, so the table holds no address (or a password typed into the wrong field). */
export const accountKey = (email: string) => sha256(email).toString('base64url');

/** A limited request: answered 429 with Retry-After (the JSON body on the API, a page on the web). */
export class TooManyRequests extends ApiException {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(429, ERROR_CODES.tooManyRequests, message, { 'Retry-After': String(retryAfterSeconds) });
  }
}

const MINUTE = 60;
const HOUR = 3600;
const DAY = 24 * HOUR;
/** Failures of one account's sign-in before it is blocked, and the first block's length. */
const LOGIN_FAILURES = 5;
const LOGIN_BLOCK_SECONDS = 15 * MINUTE;
/** User codes a person, and an address, may look up in a minute (a right one gives its point back). */
export const USER_CODE_TRIES_PER_MINUTE = 5;
/** Password-reset mails one account may be sent in an hour (PASSWORD_RESETS_PER_IP_PER_HOUR sets the address's). */
export const RESETS_PER_ACCOUNT_PER_HOUR = 3;
/** Mails proving an address (verification sent again, a new address) one account may ask for in an hour; the one sent at sign-up is not counted. */
export const VERIFICATION_MAILS_PER_HOUR = 3;

/**
 * Limits on whatever a person can guess or an anonymous client can create, with their
 * counters in Postgres (rate-limiter-flexible's Postgres store, table `rate_limits`), so
 * every replica enforces the same limits.
 *
 * - Sign-in from a browser with a device cookie for the account (web/device-cookies.ts, OWASP's
 *   scheme): 5 failures in 15 minutes block that cookie for 15 minutes, and nothing else
 *   counts, so an attacker hammering the account never locks its owner's browser out.
 * - Sign-in without one, per account (the normalized e-mail, known or not, so the answer
 *   tells nothing): 5 failures in 15 minutes block the account's sign-in from unknown
 *   browsers for 15 minutes, the next block that day 30, then an hour, and so on up to a
 *   day; a success clears the failures; an admin can clear a block. Per IP:
 *   SIGNIN_PER_IP_PER_HOUR failed sign-ins an hour (a success gives its point back).
 * - Password-reset mails: 3 an hour per account (known or not), PASSWORD_RESETS_PER_IP_PER_HOUR per IP.
 *   Mails proving an address (verification sent again, an address change): 3 an hour per account.
 * - Second-factor codes (TOTP or recovery), per account: 5 failures in 15 minutes block it for 15
 *   minutes (a million six-digit codes: guessing one takes years); a right code gives them back.
 * - Sign-up: SIGNUP_PER_IP_PER_HOUR per IP. Device-login start: DEVICE_START_PER_IP_PER_MINUTE per IP,
 *   the one limit on a hot path, claimed in batches (LeasedLimiter, startPrefetch).
 * - User codes typed on the approval page (lookup, Approve, Deny): 5 a minute per person and
 *   per IP, each counted before the code is looked up; a code that exists gives its point back.
 *
 * Every limit is taken before the work it guards, in one atomic upsert per counter, so any
 * number of parallel requests get no more tries than the same requests one after another.
 */
@Injectable()
export class RateLimits {
  private readonly loginByAccount: RateLimiterPostgres;
  private readonly loginBlocksByAccount: RateLimiterPostgres;
  private readonly loginByIp: RateLimiterPostgres;
  private readonly loginByDevice: RateLimiterPostgres;
  private readonly signupByIp: RateLimiterPostgres;
  private readonly startByIp: LeasedLimiter;
  private readonly userCodesByUser: RateLimiterPostgres;
  private readonly userCodesByIp: RateLimiterPostgres;
  private readonly resetsByIp: RateLimiterPostgres;
  private readonly resetsByAccount: RateLimiterPostgres;
  private readonly verificationMails: RateLimiterPostgres;
  private readonly secondFactors: RateLimiterPostgres;

  constructor(
    sql: Sql,
    config: AppConfig,
    private readonly metrics: Metrics,
  ) {
    const store = (keyPrefix: string, points: number, duration: number, blockDuration = 0) =>
      new RateLimiterPostgres({
        storeClient: sql.poolForLibraries,
        storeType: 'pool',
        tableName: 'rate_limits',
        tableCreated: true, // by the migration
        clearExpiredByTimeout: false, // the retention job deletes expired rows
        keyPrefix,
        points,
        duration,
        blockDuration,
      });
    this.loginByAccount = store('login:account', LOGIN_FAILURES, LOGIN_BLOCK_SECONDS);
    this.loginBlocksByAccount = store('login:blocks', 1_000, DAY);
    this.loginByIp = store('login:ip', config.signinPerIpPerHour, HOUR);
    this.loginByDevice = store('login:device', LOGIN_FAILURES, LOGIN_BLOCK_SECONDS, LOGIN_BLOCK_SECONDS);
    this.signupByIp = store('signup:ip', config.signupPerIpPerHour, HOUR);
    this.startByIp = new LeasedLimiter(store('start:ip', config.deviceStartPerIpPerMinute, MINUTE), startPrefetch(config.deviceStartPerIpPerMinute));
    this.userCodesByUser = store('code:user', USER_CODE_TRIES_PER_MINUTE, MINUTE);
    this.userCodesByIp = store('code:ip', USER_CODE_TRIES_PER_MINUTE, MINUTE);
    this.resetsByIp = store('reset:ip', config.passwordResetsPerIpPerHour, HOUR);
    this.resetsByAccount = store('reset:account', RESETS_PER_ACCOUNT_PER_HOUR, HOUR);
    this.verificationMails = store('verify:account', VERIFICATION_MAILS_PER_HOUR, HOUR);
    this.secondFactors = store('factor:account', LOGIN_FAILURES, LOGIN_BLOCK_SECONDS, LOGIN_BLOCK_SECONDS);
  }

  /**
   * Counts a sign-in attempt before its password is checked, so parallel requests cannot
   * all pass a check made before any of them is counted: each uses a point of the account
   * and of the address, and is refused once either has none left. The attempt that uses
   * up an account's points blocks it, each block within a day twice as long as the one
   * before (15 min, 30 min, 1 h, … at most a day). A success gives the account its points back.
   */
  async attemptSignIn(email: string, ip: string, deviceCookie: string | null): Promise<void> {
    if (deviceCookie) return this.consume(this.loginByDevice, deviceCookie, 'Too many failed sign-ins. Please wait before trying again.');
    const account = accountKey(email);
    const results = await Promise.allSettled([this.loginByAccount.consume(account), this.loginByIp.consume(ip)]);
    const refused = this.refusals(results, [this.loginByAccount, this.loginByIp]);
    const [accountResult] = results;
    if (accountResult.status === 'fulfilled' && accountResult.value.remainingPoints === 0) {
      // This attempt used the account's last point: whatever its password, the next ones wait.
      const blocks = await this.loginBlocksByAccount.penalty(account);
      await this.loginByAccount.block(account, Math.min(LOGIN_BLOCK_SECONDS * 2 ** (blocks.consumedPoints - 1), DAY));
    }
    if (refused.length) throw tooMany('Too many failed sign-ins. Please wait before trying again.', refused);
  }

  /** A right password: its attempt is given back where it was counted. */
  async signInSucceeded(email: string, ip: string, deviceCookie: string | null): Promise<void> {
    if (deviceCookie) await this.loginByDevice.delete(deviceCookie);
    else await Promise.all([this.loginByAccount.delete(accountKey(email)), this.loginByIp.reward(ip, 1)]);
  }

  /** Counts a second-factor code before it is checked. */
  attemptSecondFactor(userId: string): Promise<void> {
    return this.consume(this.secondFactors, userId, 'Too many wrong codes. Please wait 15 minutes before trying again.');
  }

  /** A right code: the account's attempts are given back. */
  async secondFactorSucceeded(userId: string): Promise<void> {
    await this.secondFactors.delete(userId);
  }

  /** An admin lifts an account's sign-in block (and forgets its earlier blocks); true when there was one. */
  async clearSignInBlock(email: string): Promise<boolean> {
    const account = accountKey(email);
    const failures = (await this.loginByAccount.get(account))?.consumedPoints ?? 0;
    await Promise.all([this.loginByAccount.delete(account), this.loginBlocksByAccount.delete(account)]);
    return failures > 0;
  }

  signUp(ip: string): Promise<void> {
    return this.consume(this.signupByIp, ip, 'Too many new accounts from your address. Please try again later.');
  }

  deviceStart(ip: string): Promise<void> {
    return this.consume(this.startByIp, ip, 'Too many device logins started from your address. Please wait a minute.');
  }

  /**
   * Counts one user code a signed-in person typed (or sent with Approve or Deny) before it is
   * looked up, against the person and the address: a right code waits too once either is
   * used up, so guessing cannot tell. Call userCodeFound when the code turned out to exist.
   */
  async attemptUserCode(userId: string, ip: string): Promise<void> {
    const refused = this.refusals(await Promise.allSettled([this.userCodesByUser.consume(userId), this.userCodesByIp.consume(ip)]), [this.userCodesByUser, this.userCodesByIp]);
    if (refused.length) throw tooMany('Too many wrong codes. Please wait a minute before trying again.', refused);
  }

  /** A code that exists is no guess: its point goes back, so a person approving their logins never runs out. */
  async userCodeFound(userId: string, ip: string): Promise<void> {
    await Promise.all([this.userCodesByUser.reward(userId, 1), this.userCodesByIp.reward(ip, 1)]);
  }

  /**
   * Counts a password-reset request against the address and the account (the normalized
   * e-mail, known or not: the answer tells nothing) before anything is looked up.
   */
  async requestPasswordReset(email: string, ip: string): Promise<void> {
    const limiters = [this.resetsByAccount, this.resetsByIp];
    const refused = this.refusals(await Promise.allSettled([this.resetsByAccount.consume(accountKey(email)), this.resetsByIp.consume(ip)]), limiters);
    if (refused.length) throw tooMany('Too many password reset requests. Please wait before asking again.', refused);
  }

  /** Counts a request for a mail that proves an address (the verification link again, or a new address's link), per account, before it is sent. */
  requestAddressMail(userId: string): Promise<void> {
    return this.consume(this.verificationMails, userId, 'Too many confirmation mails. Please wait before asking for another.');
  }

  /** The limits that refused, from consuming `limiters` at once (counted by limit); any other failure (the database) is thrown. */
  private refusals(results: PromiseSettledResult<RateLimiterRes>[], limiters: RateLimiterPostgres[]): RateLimiterRes[] {
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    for (const reason of refused) if (!(reason instanceof RateLimiterRes)) throw reason;
    results.forEach((r, i) => r.status === 'rejected' && this.metrics.rateLimited.inc({ limit: limiters[i]!.keyPrefix }));
    return refused as RateLimiterRes[];
  }

  private async consume(limiter: RateLimiterPostgres | LeasedLimiter, key: string, message: string): Promise<void> {
    try {
      await limiter.consume(key);
    } catch (res) {
      if (!(res instanceof RateLimiterRes)) throw res;
      this.metrics.rateLimited.inc({ limit: limiter.keyPrefix });
      throw tooMany(message, [res]);
    }
  }
}

/**
 * Start points a replica claims beyond the requests waiting for them: a 32nd of the limit, at most
 * 64. The default limit (30) gets none, so its count is exact; a limit raised for a busy proxy
 * (or a bench) makes one claim per 65 starts, and a key may then be refused at most 64 starts per
 * replica short of its limit (points claimed and not used before the minute ended).
 */
export function startPrefetch(limit: number): number {
  return Math.min(64, Math.floor(limit / 32));
}

function tooMany(message: string, results: RateLimiterRes[]): TooManyRequests {
  const waitMs = Math.max(...results.map((res) => res.msBeforeNext));
  return new TooManyRequests(message, Math.max(1, Math.ceil(waitMs / 1000)));
}
