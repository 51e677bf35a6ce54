import { DEFAULT_REFRESH_TOKEN_TTL_SECONDS, MAX_DEVICE_LOGIN_SECONDS, looksLikeEmail } from '@prospect/contract';
import { z } from 'zod';
import { booleanFlag, dnsServers, httpUrl, postgresUrl, seconds, setting, trustProxy, wholeNumber } from './setting-schemas.js';

/**
 * Every setting, declared once: its name in the code, its variable and its schema. The
 * environment's schema (EnvSchema) and the typed configuration (AppConfig) are both derived
 * from this table (app-config.ts).
 */
export const SETTINGS = {
  nodeEnv: setting('NODE_ENV', z.enum(['development', 'production', 'test']).default('development')),
  port: setting(
    'PORT',
    z.coerce
      .number({ error: 'must be a port number' })
      .int('must be a port number')
      .min(0, 'must be between 0 and 65535')
      .max(65535, 'must be between 0 and 65535')
      .default(3000),
  ),
  host: setting('HOST', z.string().trim().min(1).default('0.0.0.0')),
  /** Unset: the embedded Postgres in `dataDir`. */
  databaseUrl: setting('DATABASE_URL', postgresUrl.optional()),
  /**
   * The Postgres server itself when DATABASE_URL leads to a transaction pooler (PgBouncer): the
   * revocation listener's LISTEN and the migrations' advisory lock need a session of their own.
   */
  databaseDirectUrl: setting('DATABASE_DIRECT_URL', postgresUrl.optional()),
  /** Named prepared statements on the hot paths; false behind a pooler that cannot keep them (PgBouncer before 1.21). */
  databasePreparedStatements: setting('DATABASE_PREPARED_STATEMENTS', booleanFlag.default(true)),
  dataDir: setting('PROSPECT_DATA_DIR', z.string().trim().min(1, 'must not be empty').default('./.data')),
  /** Base of verification URLs and links in pages, without a trailing slash; unset: http://localhost:PORT. */
  publicUrl: setting('PUBLIC_URL', httpUrl.optional()),
  /** How long a device login waits for its approval; at most MAX_DEVICE_LOGIN_SECONDS, which the CLI believes. */
  deviceLoginTtlSeconds: setting(
    'DEVICE_LOGIN_TTL_SECONDS',
    z.coerce
      .number({ error: 'must be a whole number of seconds' })
      .int('must be a whole number of seconds')
      .positive('must be greater than 0')
      .max(MAX_DEVICE_LOGIN_SECONDS, `must be at most ${MAX_DEVICE_LOGIN_SECONDS} (an hour): a CLI believes no longer wait`)
      .default(600),
  ),
  devicePollIntervalSeconds: setting('DEVICE_POLL_INTERVAL_SECONDS', seconds(5)),
  /** Lifetime of an access token that comes with a refresh token (device login, OAuth). */
  accessTokenTtlSeconds: setting('ACCESS_TOKEN_TTL_SECONDS', seconds(3600)),
  /** Default lifetime of a long-lived token without refresh (POST /api/cli/auth/token). */
  cliTokenTtlSeconds: setting('CLI_TOKEN_TTL_SECONDS', seconds(30 * 24 * 3600)),
  /** The most a caller may ask for a long-lived token. */
  accessTokenMaxTtlSeconds: setting('ACCESS_TOKEN_MAX_TTL_SECONDS', seconds(365 * 24 * 3600)),
  /** A refresh token unused this long expires; each rotation starts it again (sliding)… */
  refreshTokenTtlSeconds: setting('REFRESH_TOKEN_TTL_SECONDS', seconds(DEFAULT_REFRESH_TOKEN_TTL_SECONDS)),
  /** …but no session outlives this, counted from its device login (absolute cap). */
  refreshTokenMaxLifetimeSeconds: setting('REFRESH_TOKEN_MAX_LIFETIME_SECONDS', seconds(90 * 24 * 3600)),
  /**
   * A rotated refresh token presented again within this long of its rotation, its successor
   * unused, answers that successor again (the first answer was lost); after it, the presentation
   * is a reuse and revokes the grant. The reuse interval of Okta and Auth0; never longer than the
   * access token's lifetime (RefreshTokensService), so the pair answered again is always live.
   */
  refreshReplaySeconds: setting('REFRESH_REPLAY_SECONDS', seconds(60)),
  deviceLoginEnabled: setting('DEVICE_LOGIN_ENABLED', booleanFlag.default(true)),
  allowSignup: setting('ALLOW_SIGNUP', booleanFlag.default(true)),
  logLevel: setting('LOG_LEVEL', z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')),
  adminEmail: setting('PROSPECT_ADMIN_EMAIL', z.string().trim().refine(looksLikeEmail, 'must be an e-mail address').optional()),
  adminPassword: setting('PROSPECT_ADMIN_PASSWORD', z.string().min(8, 'must be at least 8 characters').optional()),
  /** Express's `trust proxy` setting. */
  trustProxy: setting('TRUST_PROXY', trustProxy.default('loopback')),
  /** The longest any wait on the database lasts: connecting, waiting for a pooled connection, one statement. */
  databaseTimeoutMs: setting(
    'DATABASE_TIMEOUT_MS',
    z.coerce
      .number({ error: 'must be a whole number of milliseconds' })
      .int('must be a whole number of milliseconds')
      .min(100, 'must be at least 100')
      .default(5_000),
  ),
  /** Prometheus metrics on GET /metrics of this port (0: any free one); unset: no metrics server. */
  metricsPort: setting(
    'METRICS_PORT',
    z.coerce.number({ error: 'must be a port number' }).int('must be a port number').min(0, 'must be between 0 and 65535').max(65535, 'must be between 0 and 65535').optional(),
  ),
  /**
   * The address the metrics port listens on: loopback unless asked, since the metrics (routes,
   * counts, the pool) are for the operator's scraper, not the network. `0.0.0.0` where the
   * scraper reaches the pod or container by its address (the shipped manifests and compose set it).
   */
  metricsHost: setting('METRICS_HOST', z.string().trim().min(1).default('127.0.0.1')),
  /** Apply pending migrations at start (under an advisory lock); false: `npm run migrate` does, and a start with any pending refuses. */
  migrateOnStart: setting('MIGRATE_ON_START', booleanFlag.default(true)),
  /** A request (headers and body) must arrive within this; a slower one gets 408 and its connection closed. */
  httpRequestTimeoutSeconds: setting('HTTP_REQUEST_TIMEOUT_SECONDS', seconds(30)),
  /**
   * On SIGTERM, how long to go on serving while /api/health/ready answers 503, before the drain: a
   * load balancer's readiness checks take the instance out first (longer than its checks' fall × interval).
   */
  shutdownDelaySeconds: setting(
    'SHUTDOWN_DELAY_SECONDS',
    z.coerce.number({ error: 'must be a whole number of seconds' }).int('must be a whole number of seconds').min(0, 'must be 0 or more').max(60, 'must be at most 60').default(0),
  ),
  /** On SIGTERM, how long in-flight requests get to finish before their connections are closed. */
  shutdownGraceSeconds: setting('SHUTDOWN_GRACE_SECONDS', seconds(10)),
  /** Where mail goes out: `smtp://user:password@host:587` or `smtps://…:465`; unset, each mail is a log line. */
  smtpUrl: setting(
    'SMTP_URL',
    z
      .string()
      .trim()
      .refine((v) => /^smtps?:\/\/[^/]/.test(v) && URL.canParse(v), 'must be an smtp:// or smtps:// URL')
      .optional(),
  ),
  /** The sender of every mail, e.g. `Prospect <no-reply@example.com>`; unset: no-reply at PUBLIC_URL's host. */
  mailFrom: setting('MAIL_FROM', z.string().trim().min(3, 'must be an address, e.g. "Prospect <no-reply@example.com>"').max(200).optional()),
  /** After a mail's first failed try, how long until the next; it doubles with each failure, to at most 30 minutes. */
  mailRetryBaseSeconds: setting('MAIL_RETRY_BASE_SECONDS', seconds(15)),
  /** A mail not sent this long after it was queued is given up, with the last failure's reason kept (fractions allowed: 0.5 is 30 minutes). */
  mailGiveUpHours: setting(
    'MAIL_GIVE_UP_HOURS',
    z.coerce.number({ error: 'must be a number of hours' }).positive('must be greater than 0').max(24 * 30, 'must be at most 720 (30 days)').default(24),
  ),
  /**
   * New accounts must follow a mailed link before they approve a device login or create a token,
   * and sign-up no longer tells whether an address is registered. Unset: on when SMTP_URL is set.
   */
  requireEmailVerification: setting('REQUIRE_EMAIL_VERIFICATION', booleanFlag.optional()),
  /** How long after a sign-in (or a re-confirmation) approving, creating tokens and changing security settings need no password again. */
  sudoSeconds: setting('SUDO_SECONDS', seconds(2 * 3600)),
  /**
   * How long the `admin` scope of a device login lasts after its approval: tokens issued or
   * refreshed later keep the other scopes and lose `admin` (sign in again to administer).
   */
  adminGrantSeconds: setting('ADMIN_GRANT_SECONDS', seconds(12 * 3600)),
  /** Everyone must have a second factor: one without is led to set it up at the next sign-in. */
  requireSecondFactor: setting('REQUIRE_SECOND_FACTOR', booleanFlag.default(false)),
  /** Failed sign-ins one address may make in an hour: passwords, passkeys and SAML responses posted to an ACS (rate-limits.ts). */
  signinPerIpPerHour: setting('SIGNIN_PER_IP_PER_HOUR', wholeNumber(50)),
  /** Accounts one address may create in an hour. */
  signupPerIpPerHour: setting('SIGNUP_PER_IP_PER_HOUR', wholeNumber(10)),
  /** Password-reset links one address may ask for in an hour. */
  passwordResetsPerIpPerHour: setting('PASSWORD_RESETS_PER_IP_PER_HOUR', wholeNumber(10)),
  /** Device logins one address may start in a minute. */
  deviceStartPerIpPerMinute: setting('DEVICE_START_PER_IP_PER_MINUTE', wholeNumber(30)),
  /** Audit events older than this many days are deleted. */
  auditRetentionDays: setting('PROSPECT_AUDIT_RETENTION_DAYS', wholeNumber(90, 'a whole number of days')),
  /** A web session ends after this long without a request… */
  webSessionIdleSeconds: setting('WEB_SESSION_IDLE_SECONDS', seconds(7 * 24 * 3600)),
  /** …and this long after sign-in, whatever happens. */
  webSessionMaxSeconds: setting('WEB_SESSION_MAX_SECONDS', seconds(30 * 24 * 3600)),
  /**
   * How long after an identity provider last said yes to a person (a sign-in, or a refresh of its
   * tokens) Prospect asks it again, for links with browser sessions: a refusal (invalid_grant) ends
   * the sessions started through that link (issue #34, leavers).
   */
  federationCheckSeconds: setting('FEDERATION_CHECK_SECONDS', seconds(15 * 60)),
  /**
   * Whether an identity provider may be at a private or link-local address (RFC 1918, CGNAT,
   * 169.254/16, fc00::/7, fe80::/10): off, so registering a provider cannot read the server's own
   * network (issue #43); on for a provider inside the company's network. Loopback is allowed either way
   * for identity providers; the token exchange's issuers ask tokenExchangeAllowLoopbackIssuers.
   */
  federationAllowPrivateIssuers: setting('FEDERATION_ALLOW_PRIVATE_ISSUERS', booleanFlag.default(false)),
  /**
   * Whether an issuer a service account trusts (workload identity federation, token exchange) may
   * be at a loopback address (127.0.0.0/8, ::1, localhost): off, so an organization's admin cannot
   * make Prospect fetch from its own host; on for development and tests, whose issuers run there.
   * Not FEDERATION_ALLOW_PRIVATE_ISSUERS: letting an identity provider inside the company's network
   * must not open the server's own loopback to every organization's admins.
   */
  tokenExchangeAllowLoopbackIssuers: setting('TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS', booleanFlag.default(false)),
  /**
   * The DNS servers an organization's domain is verified against (its TXT record, issue #44):
   * comma-separated IP addresses with optional ports; unset, the system's (/etc/resolv.conf).
   */
  dnsServers: setting('DNS_SERVERS', dnsServers.optional()),
  /** The first retry of a failed webhook or back-channel logout delivery, doubling (with jitter) at each failure, for up to 3 days (issue #46). */
  webhookRetryBaseSeconds: setting('WEBHOOK_RETRY_BASE_SECONDS', seconds(30)),
  /**
   * Whether a webhook or back-channel logout URL may be `http:` on loopback (development and tests);
   * off, only `https:` to a public address. Private and link-local addresses stay refused either way.
   */
  webhooksAllowInsecureUrls: setting('WEBHOOKS_ALLOW_INSECURE_URLS', booleanFlag.default(false)),
};
