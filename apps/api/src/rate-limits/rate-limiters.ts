import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { AppConfig } from '../config/app-config.js';
import type { Sql } from '../database/sql.js';
import type { Metrics } from '../metrics/metrics.js';
import { LeasedLimiter } from './leased-limiter.js';

const MINUTE = 60;
const HOUR = 3600;
const DAY = 24 * HOUR;
/** Failures of one account's sign-in before it is blocked, and the first block's length. */
export const LOGIN_FAILURES = 5;
const LOGIN_BLOCK_SECONDS = 15 * MINUTE;

/**
 * The sizes of the limits that rate-limits.ts exports (the other modules and the tests read them
 * there), handed in so that this file needs nothing of it.
 */
export interface ExportedSizes {
  userCodeTriesPerMinute: number;
  resetsPerAccountPerHour: number;
  verificationMailsPerHour: number;
  mailsPerRecipientPerHour: number;
  invitationsPerOrganizationPerHour: number;
  passkeyFailures: number;
  /** The device-start limit's startPrefetch. */
  startPrefetch: number;
  domainVerificationsPerHour: number;
  providerDiscoveriesPerHour: number;
  clientAuthFailures: number;
  clientAuthFailuresPerIp: number;
  scimTokenFailuresPerIp: number;
}

/**
 * The counters behind RateLimits, one per limit, on rate-limiter-flexible's Postgres store (table
 * `rate_limits`), so every replica counts the same; and how a refusal is told from a failure and
 * counted. RateLimits decides which counters a request takes and words their refusals.
 */
export class RateLimiters {
  readonly loginByAccount: RateLimiterPostgres;
  readonly loginBlocksByAccount: RateLimiterPostgres;
  readonly loginByIp: RateLimiterPostgres;
  readonly loginByBrowser: RateLimiterPostgres;
  readonly passkeysByCredential: RateLimiterPostgres;
  readonly signupByIp: RateLimiterPostgres;
  readonly startByIp: LeasedLimiter;
  readonly userCodesByUser: RateLimiterPostgres;
  readonly userCodesByIp: RateLimiterPostgres;
  readonly resetsByIp: RateLimiterPostgres;
  readonly resetsByAccount: RateLimiterPostgres;
  readonly verificationMails: RateLimiterPostgres;
  readonly secondFactors: RateLimiterPostgres;
  readonly secondFactorsByBrowser: RateLimiterPostgres;
  readonly enrolmentCodes: RateLimiterPostgres;
  readonly mailsByRecipient: RateLimiterPostgres;
  readonly invitationsByOrganization: RateLimiterPostgres;
  readonly domainVerifications: RateLimiterPostgres;
  readonly providerDiscoveries: RateLimiterPostgres;
  readonly clientAuthByClient: RateLimiterPostgres;
  readonly clientAuthByIp: RateLimiterPostgres;
  readonly scimTokensByIp: RateLimiterPostgres;

  constructor(
    sql: Sql,
    config: AppConfig,
    private readonly metrics: Metrics,
    sizes: ExportedSizes,
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
    // The prefix predates the signed-in session as a recognised browser: a device cookie's id and a session's key ('session:…') never meet.
    this.loginByBrowser = store('login:device', LOGIN_FAILURES, LOGIN_BLOCK_SECONDS, LOGIN_BLOCK_SECONDS);
    this.passkeysByCredential = store('passkey:credential', sizes.passkeyFailures, LOGIN_BLOCK_SECONDS, LOGIN_BLOCK_SECONDS);
    this.signupByIp = store('signup:ip', config.signupPerIpPerHour, HOUR);
    this.startByIp = new LeasedLimiter(
      store('start:ip', config.deviceStartPerIpPerMinute, MINUTE),
      sizes.startPrefetch,
      config.databaseTimeoutMs,
    );
    this.userCodesByUser = store('code:user', sizes.userCodeTriesPerMinute, MINUTE);
    this.userCodesByIp = store('code:ip', sizes.userCodeTriesPerMinute, MINUTE);
    this.resetsByIp = store('reset:ip', config.passwordResetsPerIpPerHour, HOUR);
    this.resetsByAccount = store('reset:account', sizes.resetsPerAccountPerHour, HOUR);
    this.verificationMails = store('verify:account', sizes.verificationMailsPerHour, HOUR);
    this.secondFactors = store('factor:account', LOGIN_FAILURES, LOGIN_BLOCK_SECONDS, LOGIN_BLOCK_SECONDS);
    this.secondFactorsByBrowser = store('factor:device', LOGIN_FAILURES, LOGIN_BLOCK_SECONDS, LOGIN_BLOCK_SECONDS);
    this.enrolmentCodes = store('factor:enrol', LOGIN_FAILURES, LOGIN_BLOCK_SECONDS, LOGIN_BLOCK_SECONDS);
    this.mailsByRecipient = store('mail:recipient', sizes.mailsPerRecipientPerHour, HOUR);
    this.invitationsByOrganization = store('org:invitations', sizes.invitationsPerOrganizationPerHour, HOUR);
    this.domainVerifications = store('domain:verify', sizes.domainVerificationsPerHour, HOUR);
    this.providerDiscoveries = store('org:idp-discover', sizes.providerDiscoveriesPerHour, HOUR);
    this.clientAuthByClient = store('client-auth:client', sizes.clientAuthFailures, LOGIN_BLOCK_SECONDS);
    this.clientAuthByIp = store('client-auth:ip', sizes.clientAuthFailuresPerIp, HOUR);
    this.scimTokensByIp = store('scim-token:org-ip', sizes.scimTokenFailuresPerIp, HOUR);
  }

  /**
   * After the attempt that used an account's last point: whatever its password, the next ones
   * wait, each block within a day twice as long as the one before (15 min, 30 min, 1 h, … at most
   * a day).
   */
  async blockAccount(account: string): Promise<void> {
    const blocks = await this.loginBlocksByAccount.penalty(account);
    await this.loginByAccount.block(account, Math.min(LOGIN_BLOCK_SECONDS * 2 ** (blocks.consumedPoints - 1), DAY));
  }

  /**
   * The refusal of `consume` (a point of `limiter`), counted by limit; undefined when the point was
   * taken. Any other failure (the database) is thrown.
   */
  async refusal(limiter: RateLimiterPostgres | LeasedLimiter, consume: () => Promise<unknown>): Promise<RateLimiterRes | undefined> {
    try {
      await consume();
      return undefined;
    } catch (res) {
      if (!(res instanceof RateLimiterRes)) throw res;
      this.metrics.rateLimited.inc({ limit: limiter.keyPrefix });
      return res;
    }
  }

  /**
   * Takes a point of each counter in turn (`[counter, key]`), stopping at the first that refuses
   * (counted by limit): what each counter before it gave, and the refusal if there was one. Any
   * other failure (the database) is thrown.
   *
   * In turn, not at once: each counter then counts only the requests every counter before it
   * admitted, so when their keys go together (one person on one address) any number of parallel
   * requests get exactly the limit. Taken at once, two requests could each use one counter's last
   * point and be refused by the other, and fewer than the limit got through. Callers put the
   * address first: a request its address refuses never reaches the account's or person's counter.
   */
  async takeInTurn(counters: readonly (readonly [RateLimiterPostgres, string])[]): Promise<{ taken: RateLimiterRes[]; refused?: RateLimiterRes }> {
    const taken: RateLimiterRes[] = [];
    for (const [limiter, key] of counters) {
      const refused = await this.refusal(limiter, async () => taken.push(await limiter.consume(key)));
      if (refused) return { taken, refused };
    }
    return { taken };
  }
}
