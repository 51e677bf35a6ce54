import { AppConfig, ConfigError } from './app-config.js';

describe('AppConfig.fromEnv', () => {
  it('has working defaults for an empty environment', () => {
    const config = AppConfig.fromEnv({});
    expect(config).toMatchObject({
      port: 3000,
      databaseUrl: undefined,
      dataDir: './.data',
      publicUrl: 'http://localhost:3000',
      deviceLoginTtlSeconds: 600,
      devicePollIntervalSeconds: 5,
      deviceLoginEnabled: true,
      allowSignup: true,
      trustProxy: 'loopback',
      webSessionIdleSeconds: 7 * 24 * 3600,
      webSessionMaxSeconds: 30 * 24 * 3600,
    });
    expect(config.secureCookies).toBe(false);
  });

  it('reads every variable', () => {
    const config = AppConfig.fromEnv({
      PORT: '8080',
      DATABASE_URL: 'postgres://u:p@db:5432/prospect',
      PROSPECT_DATA_DIR: '/var/lib/prospect',
      PUBLIC_URL: 'https://id.example.com/',
      DEVICE_LOGIN_TTL_SECONDS: '300',
      DEVICE_POLL_INTERVAL_SECONDS: '2',
      ACCESS_TOKEN_TTL_SECONDS: '600',
      CLI_TOKEN_TTL_SECONDS: '86400',
      REFRESH_TOKEN_TTL_SECONDS: '7200',
      REFRESH_TOKEN_MAX_LIFETIME_SECONDS: '14400',
      DEVICE_LOGIN_ENABLED: 'false',
      ALLOW_SIGNUP: '0',
    });
    expect(config).toMatchObject({
      port: 8080,
      databaseUrl: 'postgres://u:p@db:5432/prospect',
      dataDir: '/var/lib/prospect',
      publicUrl: 'https://id.example.com',
      deviceLoginTtlSeconds: 300,
      devicePollIntervalSeconds: 2,
      accessTokenTtlSeconds: 600,
      cliTokenTtlSeconds: 86400,
      refreshTokenTtlSeconds: 7200,
      refreshTokenMaxLifetimeSeconds: 14400,
      deviceLoginEnabled: false,
      allowSignup: false,
    });
    expect(config.secureCookies).toBe(true);
  });

  it.each([
    ['false', false],
    ['2', 2],
    ['true', true],
    ['loopback, 10.0.0.0/8', 'loopback, 10.0.0.0/8'],
    ['uniquelocal,192.168.1.7, fd00::/8', 'uniquelocal,192.168.1.7, fd00::/8'],
  ])('reads TRUST_PROXY=%s in Express terms', (value, expected) => {
    expect(AppConfig.fromEnv({ TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  it('treats an empty variable as unset', () => {
    expect(AppConfig.fromEnv({ PORT: '', DATABASE_URL: '' })).toMatchObject({ port: 3000, databaseUrl: undefined });
  });

  it.each([
    ['PORT', 'abc', 'PORT must be a port number'],
    ['PORT', '70000', 'PORT must be between 0 and 65535'],
    ['DATABASE_URL', 'mysql://x', 'DATABASE_URL must be a postgres:// URL'],
    ['DATABASE_URL', 'postgres://u@db1:5432,db2:5432/prospect?target_session_attrs=read-write', 'DATABASE_URL names several hosts: node-postgres connects to one; give the one address that follows the primary (a managed endpoint, a proxy): docs/operations.md, "A database failover"'],
    ['DATABASE_URL', 'postgres://u@db1,db2/prospect', 'DATABASE_URL names several hosts: node-postgres connects to one; give the one address that follows the primary (a managed endpoint, a proxy): docs/operations.md, "A database failover"'],
    ['DATABASE_URL', 'postgres://u@db/prospect?target_session_attrs=read-write', 'DATABASE_URL sets target_session_attrs, which node-postgres ignores: give the one address that follows the primary (a managed endpoint, a proxy): docs/operations.md, "A database failover"'],
    ['DATABASE_DIRECT_URL', 'postgres://db:5432/prospect', 'DATABASE_DIRECT_URL needs DATABASE_URL (the pooler in front of that server)'],
    ['DATABASE_PREPARED_STATEMENTS', 'off', 'DATABASE_PREPARED_STATEMENTS must be true or false'],
    ['SMTP_URL', 'mail.example.com:587', 'SMTP_URL must be an smtp:// or smtps:// URL'],
    ['SMTP_URL', 'http://mail.example.com', 'SMTP_URL must be an smtp:// or smtps:// URL'],
    ['PUBLIC_URL', 'localhost:3000', 'PUBLIC_URL must be an http:// or https:// URL'],
    ['DEVICE_LOGIN_TTL_SECONDS', '-5', 'DEVICE_LOGIN_TTL_SECONDS must be greater than 0'],
    ['DEVICE_LOGIN_TTL_SECONDS', '7200', 'DEVICE_LOGIN_TTL_SECONDS must be at most 3600 (an hour)'],
    ['DEVICE_POLL_INTERVAL_SECONDS', '1.5', 'DEVICE_POLL_INTERVAL_SECONDS must be a whole number of seconds'],
    ['ACCESS_TOKEN_TTL_SECONDS', 'forever', 'ACCESS_TOKEN_TTL_SECONDS must be a whole number of seconds'],
    ['DEVICE_LOGIN_ENABLED', 'maybe', 'DEVICE_LOGIN_ENABLED must be true or false'],
    ['ALLOW_SIGNUP', 'Y', 'ALLOW_SIGNUP must be true or false'],
    ['LOG_LEVEL', 'loud', 'LOG_LEVEL'],
    ['PROSPECT_ADMIN_EMAIL', 'root', 'PROSPECT_ADMIN_EMAIL must be an e-mail address'],
    ['TRUST_PROXY', 'every one; please', 'TRUST_PROXY must be true, false, a hop count, or a comma-separated list'],
    ['TRUST_PROXY', 'maybe', 'TRUST_PROXY must be true, false, a hop count, or a comma-separated list'],
    ['TRUST_PROXY', 'loopback, 10.0.0.0/33', 'TRUST_PROXY must be'],
    ['TRUST_PROXY', '-1', 'TRUST_PROXY must be'],
    ['WEB_SESSION_IDLE_SECONDS', '0', 'WEB_SESSION_IDLE_SECONDS must be greater than 0'],
  ])('rejects %s=%s with one line naming it', (name, value, expected) => {
    let error: unknown;
    try {
      AppConfig.fromEnv({ [name]: value });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(expected);
    expect(message).toContain(JSON.stringify(value));
    expect(message).not.toContain('\n');
  });

  it('requires the admin e-mail and password together', () => {
    expect(() => AppConfig.fromEnv({ PROSPECT_ADMIN_EMAIL: 'a@b.co' })).toThrow(/PROSPECT_ADMIN_PASSWORD must be set together/);
  });

  it('refuses a session idle timeout above its absolute lifetime', () => {
    expect(() => AppConfig.fromEnv({ WEB_SESSION_IDLE_SECONDS: '100', WEB_SESSION_MAX_SECONDS: '50' })).toThrow(
      /WEB_SESSION_IDLE_SECONDS must not exceed WEB_SESSION_MAX_SECONDS/,
    );
  });

  it('refuses a default token lifetime above the maximum', () => {
    expect(() => AppConfig.fromEnv({ ACCESS_TOKEN_TTL_SECONDS: '100', ACCESS_TOKEN_MAX_TTL_SECONDS: '50' })).toThrow(
      /ACCESS_TOKEN_TTL_SECONDS must not exceed ACCESS_TOKEN_MAX_TTL_SECONDS/,
    );
  });

  it('refuses an access-token lifetime of more than a day, as set before refresh tokens existed, naming CLI_TOKEN_TTL_SECONDS', () => {
    expect(() => AppConfig.fromEnv({ ACCESS_TOKEN_TTL_SECONDS: String(30 * 86400) })).toThrow(
      /ACCESS_TOKEN_TTL_SECONDS must be at most 86400 \(a day\): .*CLI_TOKEN_TTL_SECONDS/,
    );
  });

  it('defaults to an hour for access tokens with a refresh token, 30 days sliding up to 90 for refresh tokens, 30 days for CLI tokens', () => {
    expect(AppConfig.fromEnv({})).toMatchObject({
      accessTokenTtlSeconds: 3600,
      refreshTokenTtlSeconds: 30 * 86400,
      refreshTokenMaxLifetimeSeconds: 90 * 86400,
      cliTokenTtlSeconds: 30 * 86400,
    });
  });

  it.each([
    [{ CLI_TOKEN_TTL_SECONDS: '100', ACCESS_TOKEN_MAX_TTL_SECONDS: '50', ACCESS_TOKEN_TTL_SECONDS: '10' }, /CLI_TOKEN_TTL_SECONDS must not exceed ACCESS_TOKEN_MAX_TTL_SECONDS/],
    [{ REFRESH_TOKEN_TTL_SECONDS: '100', REFRESH_TOKEN_MAX_LIFETIME_SECONDS: '50' }, /REFRESH_TOKEN_TTL_SECONDS must not exceed REFRESH_TOKEN_MAX_LIFETIME_SECONDS/],
  ])('refuses a lifetime above its cap: %j', (env, message) => {
    expect(() => AppConfig.fromEnv(env)).toThrow(message);
  });
});
