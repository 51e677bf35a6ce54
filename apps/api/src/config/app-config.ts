import { z } from 'zod';
import { SETTINGS } from './settings.js';

/**
 * The service's configuration: read once from the environment, validated, and
 * handed to Nest as one typed object. Nothing else reads process.env. The settings
 * are declared in settings.ts; this file derives the environment's schema (with the
 * rules that tie settings together) and AppConfig from them.
 */

/** The most an access token that comes with a refresh token may live. */
export const MAX_ACCESS_TOKEN_TTL_WITH_REFRESH = 24 * 3600;

type Settings = typeof SETTINGS;
type SettingValues = { [K in keyof Settings]: z.output<Settings[K]['schema']> };
type EnvShape = { [K in keyof Settings as Settings[K]['env']]: Settings[K]['schema'] };

export const EnvSchema = z
  .object(Object.fromEntries(Object.values(SETTINGS).map((s) => [s.env, s.schema])) as EnvShape)
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
    if (env.DATABASE_DIRECT_URL && !env.DATABASE_URL) {
      ctx.addIssue({ code: 'custom', path: ['DATABASE_DIRECT_URL'], message: 'needs DATABASE_URL (the pooler in front of that server)' });
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

/** Every setting of the table, read-only, on AppConfig (declaration merging: one declaration of each). */
export interface AppConfig extends Readonly<Omit<SettingValues, 'publicUrl' | 'adminEmail' | 'adminPassword' | 'mailFrom' | 'requireEmailVerification'>> {}

/** The validated configuration, injected wherever settings are needed. */
export class AppConfig {
  /** PUBLIC_URL, or http://localhost:PORT. */
  readonly publicUrl!: string;
  /** PUBLIC_URL was set: links use it whatever address a request came to. */
  readonly publicUrlSet!: boolean;
  /** MAIL_FROM, or `Prospect <no-reply@…>` at PUBLIC_URL's host. */
  readonly mailFrom!: string;
  /** REQUIRE_EMAIL_VERIFICATION, or whether mail really goes out (SMTP_URL). */
  readonly requireEmailVerification!: boolean;
  /** PROSPECT_ADMIN_EMAIL and _PASSWORD, which come together. */
  readonly admin?: { email: string; password: string };

  /** Secure cookies only make sense when people reach us over https. */
  get secureCookies(): boolean {
    return this.publicUrl.startsWith('https://');
  }

  static fromEnv(env: Record<string, string | undefined>): AppConfig {
    return AppConfig.fromValidEnv(validateEnv(env));
  }

  static fromValidEnv(env: Env): AppConfig {
    const values = Object.fromEntries(Object.entries(SETTINGS).map(([name, { env: variable }]) => [name, env[variable as keyof Env]])) as SettingValues;
    const { adminEmail, adminPassword, publicUrl, mailFrom, requireEmailVerification, ...rest } = values;
    const site = publicUrl ?? `http://localhost:${values.port}`;
    return Object.assign(new AppConfig(), rest, {
      publicUrl: site,
      publicUrlSet: publicUrl !== undefined,
      mailFrom: mailFrom ?? `Prospect <no-reply@${new URL(site).hostname}>`,
      requireEmailVerification: requireEmailVerification ?? rest.smtpUrl !== undefined,
      admin: adminEmail && adminPassword ? { email: adminEmail, password: adminPassword } : undefined,
    });
  }

  /** A copy with some settings changed (tests, and PORT=0 resolving to a real port). */
  with(changes: Partial<Omit<AppConfig, 'secureCookies' | 'with'>>): AppConfig {
    return Object.assign(Object.create(AppConfig.prototype) as AppConfig, this, changes);
  }
}
