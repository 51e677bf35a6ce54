/** The product's name, used for the binary, the config directory and the env prefix. */
export const SERVICE_NAME = 'prospect';

/** Environment variables the CLI reads (seed §5). */
export const ENV = {
  apiBaseUrl: 'PROSPECT_API_BASE_URL',
  configDir: 'PROSPECT_CONFIG_DIR',
  skipAuth: 'PROSPECT_SKIP_AUTH',
  /** A token to use instead of the session file (like GH_TOKEN); never written to disk. */
  token: 'PROSPECT_TOKEN',
} as const;

/** The session file's name inside the config directory (seed §2.4). */
export const SESSION_FILE_NAME = 'auth-session.json';

/** Every HTTP route of the contract, relative to the API base URL. */
export const ROUTES = {
  deviceStart: '/api/cli/auth/device/start',
  devicePoll: '/api/cli/auth/device/poll',
  deviceCancel: '/api/cli/auth/device/cancel',
  me: '/api/cli/auth/me',
  issueToken: '/api/cli/auth/token',
  logout: '/api/cli/auth/logout',
  refresh: '/api/cli/auth/refresh',
  /** Admins: lift an account's sign-in block (rate-limits.ts). */
  adminClearSignInBlock: '/api/admin/sign-in-blocks/clear',
  health: '/api/health',
  /** Liveness: never touches the database. */
  healthLive: '/api/health/live',
  /** Readiness: database, migrations, revocation listener. */
  healthReady: '/api/health/ready',
  device: '/device',
  tokensPage: '/settings/tokens',
  signup: '/signup',
  login: '/login',
} as const;

/**
 * The request header that makes a `POST` safe to send again (draft-ietf-httpapi-idempotency-key-header):
 * a key the client chooses, an sf-string (`"8e03978e-40d5-43e8-bc93-6894a57f9324"`; a bare value is
 * taken too), at most IDEMPOTENCY_KEY_MAX_LENGTH characters. `POST /api/cli/auth/token` answers the
 * same key, sent again with the same credential and body within a day, with the same token.
 */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** Prefix of every access token, so secret scanners can recognise a leaked one. */
export const ACCESS_TOKEN_PREFIX = 'prs_';
/** Prefix of every refresh token (issue #14): one use each, rotated on every refresh. */
export const REFRESH_TOKEN_PREFIX = 'prsr_';
/** Prefix of every device code. */
export const DEVICE_CODE_PREFIX = 'prsd_';
/** Prefix of every authorization code (issue #33): single use, 60 seconds. */
export const AUTHORIZATION_CODE_PREFIX = 'prsc_';
/** Prefix of every confidential client's secret: shown once, only its SHA-256 kept. */
export const CLIENT_SECRET_PREFIX = 'prsk_';

/** The OAuth client the custom /api/cli/auth/device/* routes act as (and the CLI's client_id). */
export const CLI_CLIENT_ID = 'prospect-cli';

/**
 * Every scope this service defines, with the sentence the approval page shows for it. A token
 * carries the scopes its sign-in was granted, and the service's routes ask for theirs
 * (`403 insufficient_scope` otherwise); nothing else is a scope here (`invalid_scope`).
 */
export const SCOPES = {
  profile: 'See your name and e-mail address',
  tokens: 'Create tokens that act as you',
  admin: 'Use the administration API, if you are an administrator',
  /** OpenID Connect (issue #33): an ID token saying who signed in, and userinfo. */
  openid: 'Sign you in with your Prospect account',
  /** OpenID Connect: the address and whether it is verified, in the ID token and userinfo. */
  email: 'See your e-mail address and whether it is confirmed',
  /** Organizations (issue #44): which ones you belong to, with your role; managing one still takes the role it needs. */
  orgs: 'See your organizations and act in them with your role',
} as const;
export type Scope = keyof typeof SCOPES;

/** What the CLI's client (`prospect-cli`) may be granted: everything it does for a person, `admin` included when asked for. */
export const CLI_SCOPES: readonly Scope[] = ['profile', 'tokens', 'admin', 'orgs'];

/**
 * What `prospect auth:login` asks for unless `--scopes` says otherwise, and what a device login of
 * the CLI is granted when it names none: `admin` is asked for, approved in sudo mode and short-lived
 * (ADMIN_GRANT_SECONDS), never had by default (issue #31).
 */
export const CLI_DEFAULT_SCOPES: readonly Scope[] = ['profile', 'tokens', 'orgs'];

/** The sign-in that asks for administration, as the API's refusals and the CLI's help name it. */
export const ADMIN_LOGIN_COMMAND = `${SERVICE_NAME} auth:login --scopes profile,tokens,admin,orgs`;

/** The scopes of a space-separated `scope` value, in the registry's order; undefined if one is not a scope here. */
export function parseScopes(value: string): Scope[] | undefined {
  const names = value.split(' ').filter(Boolean);
  if (!names.every((name): name is Scope => Object.hasOwn(SCOPES, name))) return undefined;
  return (Object.keys(SCOPES) as Scope[]).filter((scope) => names.includes(scope));
}

/** The OAuth 2.0 surface (RFC 8414, 8628, 6749, 7009, 7662) and OpenID Connect's, beside the contract's own routes. */
export const OAUTH_ROUTES = {
  metadata: '/.well-known/oauth-authorization-server',
  /** OpenID Connect Discovery 1.0. */
  openidConfiguration: '/.well-known/openid-configuration',
  /** RFC 6749 §3.1, authorization code with PKCE only (issue #33); the consent page answers here. */
  authorize: '/oauth/authorize',
  deviceAuthorization: '/oauth/device_authorization',
  token: '/oauth/token',
  revoke: '/oauth/revoke',
  introspect: '/oauth/introspect',
  /** OpenID Connect Core §5.3. */
  userinfo: '/oauth/userinfo',
  /** The public keys ID tokens are signed with (RFC 7517). */
  jwks: '/oauth/jwks',
} as const;

/** RFC 8628 §3.4: the grant type of a device code at the token endpoint. */
export const DEVICE_CODE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';

/** User-code letters: consonants only, no look-alikes (RFC 8628 §6.1). */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;

/** Stable machine codes carried in the `error` field of every error body. */
export const ERROR_CODES = {
  invalidRequest: 'invalid_request',
  invalidToken: 'invalid_token',
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  notFound: 'not_found',
  methodNotAllowed: 'method_not_allowed',
  slowDown: 'slow_down',
  payloadTooLarge: 'payload_too_large',
  tooManyRequests: 'too_many_requests',
  conflict: 'conflict',
  unsupportedMediaType: 'unsupported_media_type',
  internal: 'internal_error',
  unavailable: 'service_unavailable',
  // RFC 6749 §5.2 and RFC 8628 §3.5, for the OAuth surface and the refresh route.
  invalidGrant: 'invalid_grant',
  invalidClient: 'invalid_client',
  unauthorizedClient: 'unauthorized_client',
  unsupportedGrantType: 'unsupported_grant_type',
  invalidScope: 'invalid_scope',
  // RFC 6750 §3.1: the token is valid but lacks the scope the route needs.
  insufficientScope: 'insufficient_scope',
  authorizationPending: 'authorization_pending',
  accessDenied: 'access_denied',
  expiredToken: 'expired_token',
  // RFC 6749 §4.1.2.1 and OpenID Connect Core §3.1.2.6, answered to a redirect URI.
  unsupportedResponseType: 'unsupported_response_type',
  loginRequired: 'login_required',
  consentRequired: 'consent_required',
  interactionRequired: 'interaction_required',
  requestNotSupported: 'request_not_supported',
  requestUriNotSupported: 'request_uri_not_supported',
} as const;
export type ErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

/** Where the CLI signs in when neither `--api-url` nor PROSPECT_API_BASE_URL says otherwise: `npm start`'s address. */
export const DEFAULT_API_BASE_URL = 'http://localhost:3000';

/**
 * How long an unused refresh token lives unless the server's REFRESH_TOKEN_TTL_SECONDS says
 * otherwise (each rotation starts it again). The CLI names it when a logout could not reach the
 * server: that long, at most, the session it forgot can still be renewed there.
 */
export const DEFAULT_REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

/**
 * The longest a device login may wait for its approval (an hour): the API refuses a longer
 * DEVICE_LOGIN_TTL_SECONDS, and the CLI believes no server that says more (a bigger number
 * would overflow its timers or show a countdown of years).
 */
export const MAX_DEVICE_LOGIN_SECONDS = 3_600;
