import express from 'express';
import { z } from 'zod';

/**
 * The service's configuration: read once from the environment, validated, and
 * handed to Nest as one typed object. Nothing else reads process.env.
 */

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const seconds = (fallback: number) =>
  z.coerce
    .number({ error: 'must be a whole number of seconds' })
    .int('must be a whole number of seconds')
    .positive('must be greater than 0')
    .default(fallback);

const postgresUrl = z
  .string()
  .trim()
  .refine((v) => /^postgres(ql)?:\/\/.+/.test(v) && URL.canParse(v), 'must be a postgres:// URL');

const httpUrl = z
  .string()
  .trim()
  .refine((v) => /^https?:\/\/[^/]/.test(v) && URL.canParse(v), 'must be an http:// or https:// URL')
  .transform((v) => v.replace(/\/+$/, ''));

/**
 * Which proxies' X-Forwarded-* headers to believe, in Express's own syntax: `true`, `false`, a
 * hop count, or a comma-separated list of addresses, subnets and the names `loopback`,
 * `linklocal`, `uniquelocal`. Default `loopback`: a TLS terminator on the same machine.
 * Checked by Express itself (its proxy-addr compiles the list), so what passes here is
 * what the app can be set to, rather than a start that fails later without naming it.
 */
const trustProxy = z
  .string()
  .trim()
  .transform((v): boolean | number | string => (v === 'false' ? false : v === 'true' ? true : /^\d+$/.test(v) ? Number(v) : v))
  .refine(
    acceptedByExpress,
    'must be true, false, a hop count, or a comma-separated list of addresses, subnets (10.0.0.0/8) and loopback, linklocal or uniquelocal',
  );

function acceptedByExpress(trustProxy: boolean | number | string): boolean {
  try {
    express().set('trust proxy', trustProxy);
    return true;
  } catch {
    return false;
  }
}

/** The most an access token that comes with a refresh token may live. */
export const MAX_ACCESS_TOKEN_TTL_WITH_REFRESH = 24 * 3600;

export const EnvSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    PORT: z.coerce
      .number({ error: 'must be a port number' })
      .int('must be a port number')
      .min(0, 'must be between 0 and 65535')
      .max(65535, 'must be between 0 and 65535')
      .default(3000),
    HOST: z.string().trim().min(1).default('0.0.0.0'),
    DATABASE_URL: postgresUrl.optional(),
    PROSPECT_DATA_DIR: z.string().trim().min(1, 'must not be empty').default('./.data'),
    PUBLIC_URL: httpUrl.optional(),
    DEVICE_LOGIN_TTL_SECONDS: seconds(600),
    DEVICE_POLL_INTERVAL_SECONDS: seconds(5),
    ACCESS_TOKEN_TTL_SECONDS: seconds(3600),
    CLI_TOKEN_TTL_SECONDS: seconds(30 * 24 * 3600),
    ACCESS_TOKEN_MAX_TTL_SECONDS: seconds(365 * 24 * 3600),
    REFRESH_TOKEN_TTL_SECONDS: seconds(30 * 24 * 3600),
    REFRESH_TOKEN_MAX_LIFETIME_SECONDS: seconds(90 * 24 * 3600),
    DEVICE_LOGIN_ENABLED: booleanFlag.default(true),
    ALLOW_SIGNUP: booleanFlag.default(true),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    PROSPECT_ADMIN_EMAIL: z.email('must be an e-mail address').optional(),
    PROSPECT_ADMIN_PASSWORD: z.string().min(8, 'must be at least 8 characters').optional(),
    TRUST_PROXY: trustProxy.default('loopback'),
    DATABASE_TIMEOUT_MS: z.coerce
      .number({ error: 'must be a whole number of milliseconds' })
      .int('must be a whole number of milliseconds')
      .min(100, 'must be at least 100')
      .default(5_000),
    HTTP_REQUEST_TIMEOUT_SECONDS: seconds(30),
    SHUTDOWN_GRACE_SECONDS: seconds(10),
    SIGNIN_PER_IP_PER_HOUR: z.coerce.number({ error: 'must be a whole number' }).int('must be a whole number').positive('must be greater than 0').default(50),
    SIGNUP_PER_IP_PER_HOUR: z.coerce.number({ error: 'must be a whole number' }).int('must be a whole number').positive('must be greater than 0').default(10),
    DEVICE_START_PER_IP_PER_MINUTE: z.coerce.number({ error: 'must be a whole number' }).int('must be a whole number').positive('must be greater than 0').default(30),
    PROSPECT_AUDIT_RETENTION_DAYS: z.coerce.number({ error: 'must be a whole number of days' }).int('must be a whole number of days').positive('must be greater than 0').default(90),
    WEB_SESSION_IDLE_SECONDS: seconds(7 * 24 * 3600),
    WEB_SESSION_MAX_SECONDS: seconds(30 * 24 * 3600),
  })
  .superRefine((env, ctx) => {
    if (env.ACCESS_TOKEN_TTL_SECONDS > env.ACCESS_TOKEN_MAX_TTL_SECONDS) {
      ctx.addIssue({
        code: 'custom',
        path: ['ACCESS_TOKEN_TTL_SECONDS'],
        message: 'must not exceed ACCESS_TOKEN_MAX_TTL_SECONDS',
      });
    }
    // It was the lifetime of every device-login token before refresh tokens: a setting of
    // weeks left from then would make refresh pointless, so it is refused by name.
    if (env.ACCESS_TOKEN_TTL_SECONDS > MAX_ACCESS_TOKEN_TTL_WITH_REFRESH) {
      ctx.addIssue({
        code: 'custom',
        path: ['ACCESS_TOKEN_TTL_SECONDS'],
        message: `must be at most ${MAX_ACCESS_TOKEN_TTL_WITH_REFRESH} (a day): access tokens come with a refresh token; CLI_TOKEN_TTL_SECONDS sets long-lived tokens`,
      });
    }
    if (env.CLI_TOKEN_TTL_SECONDS > env.ACCESS_TOKEN_MAX_TTL_SECONDS) {
      ctx.addIssue({ code: 'custom', path: ['CLI_TOKEN_TTL_SECONDS'], message: 'must not exceed ACCESS_TOKEN_MAX_TTL_SECONDS' });
    }
    if (env.REFRESH_TOKEN_TTL_SECONDS > env.REFRESH_TOKEN_MAX_LIFETIME_SECONDS) {
      ctx.addIssue({ code: 'custom', path: ['REFRESH_TOKEN_TTL_SECONDS'], message: 'must not exceed REFRESH_TOKEN_MAX_LIFETIME_SECONDS' });
    }
    if (env.WEB_SESSION_IDLE_SECONDS > env.WEB_SESSION_MAX_SECONDS) {
      ctx.addIssue({ code: 'custom', path: ['WEB_SESSION_IDLE_SECONDS'], message: 'must not exceed WEB_SESSION_MAX_SECONDS' });
    }
    if (Boolean(env.PROSPECT_ADMIN_EMAIL) !== Boolean(env.PROSPECT_ADMIN_PASSWORD)) {
      ctx.addIssue({
        code: 'custom',
        path: [env.PROSPECT_ADMIN_EMAIL ? 'PROSPECT_ADMIN_PASSWORD' : 'PROSPECT_ADMIN_EMAIL'],
        message: 'must be set together with the other PROSPECT_ADMIN_* variable',
      });
    }
  });

export type Env = z.output<typeof EnvSchema>;

/**
 * The environment checked against EnvSchema: what @nestjs/config's `validate` runs
 * (config.module.ts), and what main.ts runs before Nest starts, since the result
 * decides whether to start the embedded Postgres at all.
 * An empty variable means "not set", as in most shells' `FOO= cmd`.
 * @throws ConfigError naming the first wrong variable, in one line.
 */
export function validateEnv(env: Record<string, unknown>): Env {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? 'environment');
    throw new ConfigError(`Invalid configuration: ${name} ${issue.message} (got ${JSON.stringify(present[name] ?? '')})`);
  }
  return parsed.data;
}

/** A configuration problem a person must fix; printed as one line, never a stack trace. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** The validated configuration, injected wherever settings are needed. */
export class AppConfig {
  readonly nodeEnv!: 'development' | 'production' | 'test';
  readonly port!: number;
  readonly host!: string;
  /** Unset: the embedded Postgres in `dataDir`. */
  readonly databaseUrl?: string;
  readonly dataDir!: string;
  /** Base of verification URLs and links in pages, without a trailing slash. */
  readonly publicUrl!: string;
  readonly deviceLoginTtlSeconds!: number;
  readonly devicePollIntervalSeconds!: number;
  /** Lifetime of an access token that comes with a refresh token (device login, OAuth). */
  readonly accessTokenTtlSeconds!: number;
  /** Default lifetime of a long-lived token without refresh (POST /api/cli/auth/token). */
  readonly cliTokenTtlSeconds!: number;
  /** The most a caller may ask for a long-lived token. */
  readonly accessTokenMaxTtlSeconds!: number;
  /** A refresh token unused this long expires; each rotation starts it again (sliding)… */
  readonly refreshTokenTtlSeconds!: number;
  /** …but no session outlives this, counted from its device login (absolute cap). */
  readonly refreshTokenMaxLifetimeSeconds!: number;
  readonly deviceLoginEnabled!: boolean;
  readonly allowSignup!: boolean;
  readonly logLevel!: string;
  readonly admin?: { email: string; password: string };
  /** Express's `trust proxy` setting. */
  readonly trustProxy!: boolean | number | string;
  /** The longest any wait on the database lasts: connecting, waiting for a pooled connection, one statement. */
  readonly databaseTimeoutMs!: number;
  /** A request (headers and body) must arrive within this; a slower one gets 408 and its connection closed. */
  readonly httpRequestTimeoutSeconds!: number;
  /** On SIGTERM, how long in-flight requests get to finish before their connections are closed. */
  readonly shutdownGraceSeconds!: number;
  /** Failed sign-ins one address may make in an hour. */
  readonly signinPerIpPerHour!: number;
  /** Accounts one address may create in an hour. */
  readonly signupPerIpPerHour!: number;
  /** Device logins one address may start in a minute. */
  readonly deviceStartPerIpPerMinute!: number;
  /** Audit events older than this many days are deleted. */
  readonly auditRetentionDays!: number;
  /** A web session ends after this long without a request… */
  readonly webSessionIdleSeconds!: number;
  /** …and this long after sign-in, whatever happens. */
  readonly webSessionMaxSeconds!: number;

  /** Secure cookies only make sense when people reach us over https. */
  get secureCookies(): boolean {
    return this.publicUrl.startsWith('https://');
  }

  static fromEnv(env: Record<string, string | undefined>): AppConfig {
    return AppConfig.fromValidEnv(validateEnv(env));
  }

  static fromValidEnv(e: Env): AppConfig {
    return Object.assign(new AppConfig(), {
      nodeEnv: e.NODE_ENV,
      port: e.PORT,
      host: e.HOST,
      databaseUrl: e.DATABASE_URL,
      dataDir: e.PROSPECT_DATA_DIR,
      publicUrl: e.PUBLIC_URL ?? `http://localhost:${e.PORT}`,
      deviceLoginTtlSeconds: e.DEVICE_LOGIN_TTL_SECONDS,
      devicePollIntervalSeconds: e.DEVICE_POLL_INTERVAL_SECONDS,
      accessTokenTtlSeconds: e.ACCESS_TOKEN_TTL_SECONDS,
      cliTokenTtlSeconds: e.CLI_TOKEN_TTL_SECONDS,
      accessTokenMaxTtlSeconds: e.ACCESS_TOKEN_MAX_TTL_SECONDS,
      refreshTokenTtlSeconds: e.REFRESH_TOKEN_TTL_SECONDS,
      refreshTokenMaxLifetimeSeconds: e.REFRESH_TOKEN_MAX_LIFETIME_SECONDS,
      deviceLoginEnabled: e.DEVICE_LOGIN_ENABLED,
      allowSignup: e.ALLOW_SIGNUP,
      logLevel: e.LOG_LEVEL,
      trustProxy: e.TRUST_PROXY,
      databaseTimeoutMs: e.DATABASE_TIMEOUT_MS,
      httpRequestTimeoutSeconds: e.HTTP_REQUEST_TIMEOUT_SECONDS,
      shutdownGraceSeconds: e.SHUTDOWN_GRACE_SECONDS,
      auditRetentionDays: e.PROSPECT_AUDIT_RETENTION_DAYS,
      deviceStartPerIpPerMinute: e.DEVICE_START_PER_IP_PER_MINUTE,
      signupPerIpPerHour: e.SIGNUP_PER_IP_PER_HOUR,
      signinPerIpPerHour: e.SIGNIN_PER_IP_PER_HOUR,
      webSessionIdleSeconds: e.WEB_SESSION_IDLE_SECONDS,
      webSessionMaxSeconds: e.WEB_SESSION_MAX_SECONDS,
      admin:
        e.PROSPECT_ADMIN_EMAIL && e.PROSPECT_ADMIN_PASSWORD
          ? { email: e.PROSPECT_ADMIN_EMAIL, password: e.PROSPECT_ADMIN_PASSWORD }
          : undefined,
    });
  }

  /** A copy with some settings changed (tests, and PORT=0 resolving to a real port). */
  with(changes: Partial<Omit<AppConfig, 'secureCookies' | 'with'>>): AppConfig {
    return Object.assign(Object.create(AppConfig.prototype) as AppConfig, this, changes);
  }
}
