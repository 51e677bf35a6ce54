import { Injectable } from '@nestjs/common';
import { ERROR_CODES } from '@prospect/contract';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiException } from '../common/api-exception.js';
import { sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import { Sql } from '../database/sql.js';

/** The key of an account's counter: the SHA-256 of its normalized e-mail, so the table holds no address (or a password typed into the wrong field). */
const accountKey = (email: string) => sha256(email).toString('base64url');

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

/**
 * Limits on whatever a person can guess or an anonymous client can create, with their
 * counters in Postgres (rate-limiter-flexible's Postgres store, table `rate_limits`), so
 * every replica enforces the same limits.
 *
 * - Sign-in, per account (the normalized e-mail, known or not, so the answer tells
 *   nothing): 5 failures in 15 minutes block the account's sign-in for 15 minutes, the
 *   next block that day 30, then an hour, and so on up to a day; a success clears the
 *   failures. Per IP: SIGNIN_PER_IP_PER_HOUR failed sign-ins an hour (a success gives its point back).
 * - Sign-up: SIGNUP_PER_IP_PER_HOUR per IP. Device-login start: DEVICE_START_PER_IP_PER_MINUTE per IP.
 */
@Injectable()
export class RateLimits {
  private readonly loginByAccount: RateLimiterPostgres;
  private readonly loginBlocksByAccount: RateLimiterPostgres;
  private readonly loginByIp: RateLimiterPostgres;
  private readonly signupByIp: RateLimiterPostgres;
  private readonly startByIp: RateLimiterPostgres;

  constructor(sql: Sql, config: AppConfig) {
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
    this.signupByIp = store('signup:ip', config.signupPerIpPerHour, HOUR);
    this.startByIp = store('start:ip', config.deviceStartPerIpPerMinute, MINUTE);
  }

  /**
   * Counts a sign-in attempt before its password is checked, so parallel requests cannot
   * all pass a check made before any of them is counted: each uses a point of the account
   * and of the address, and is refused once either has none left. The attempt that uses
   * up an account's points blocks it, each block within a day twice as long as the one
   * before (15 min, 30 min, 1 h, … at most a day). A success gives the account its points back.
   */
  async attemptSignIn(email: string, ip: string): Promise<void> {
    const account = accountKey(email);
    const results = await Promise.allSettled([this.loginByAccount.consume(account), this.loginByIp.consume(ip)]);
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    for (const reason of refused) if (!(reason instanceof RateLimiterRes)) throw reason;
    const [accountResult] = results;
    if (accountResult.status === 'fulfilled' && accountResult.value.remainingPoints === 0) {
      // This attempt used the account's last point: whatever its password, the next ones wait.
      const blocks = await this.loginBlocksByAccount.penalty(account);
      await this.loginByAccount.block(account, Math.min(LOGIN_BLOCK_SECONDS * 2 ** (blocks.consumedPoints - 1), DAY));
    }
    if (refused.length) throw tooMany('Too many failed sign-ins. Please wait before trying again.', refused as RateLimiterRes[]);
  }

  async signInSucceeded(email: string, ip: string): Promise<void> {
    await Promise.all([this.loginByAccount.delete(accountKey(email)), this.loginByIp.reward(ip, 1)]);
  }

  signUp(ip: string): Promise<void> {
    return consume(this.signupByIp, ip, 'Too many new accounts from your address. Please try again later.');
  }

  deviceStart(ip: string): Promise<void> {
    return consume(this.startByIp, ip, 'Too many device logins started from your address. Please wait a minute.');
  }
}

async function consume(limiter: RateLimiterPostgres, key: string, message: string): Promise<void> {
  try {
    await limiter.consume(key);
  } catch (res) {
    if (res instanceof RateLimiterRes) throw tooMany(message, [res]);
    throw res;
  }
}

function tooMany(message: string, results: RateLimiterRes[]): TooManyRequests {
  const waitMs = Math.max(...results.map((res) => res.msBeforeNext));
  return new TooManyRequests(message, Math.max(1, Math.ceil(waitMs / 1000)));
}
