// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { OrganizationSchema } from './organizations.js';
import { DEVICE_CODE_GRANT_TYPE } from './constants.js';
import { ACCESS_TOKEN_TOKEN_TYPE, TOKEN_EXCHANGE_GRANT_TYPE } from './service-accounts.js';

/**
 * The OAuth 2.0 surface's wire shapes (RFC 8414, 8628, 6749 §5, 7009, 7662), in the RFCs'
 * snake_case. Requests are form-encoded; unknown parameters are ignored, as RFC 6749 §3.2
 * asks, so the request schemas are not strict.
 */

const param = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));
/** RFC 6749 §3.3: space-separated scope tokens of printable ASCII without `"` and `\`. */
const scope = () => z.string().check(z.maxLength(500), z.regex(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/, 'must be space-separated scope tokens'));

export const ClientIdSchema = z.string().check(z.regex(/^[a-z0-9][a-z0-9._-]{2,63}$/, 'must be 3 to 64 lower-case letters, digits, ".", "_" or "-"'));

/** The longest redirect URI a client may register (and send). */
export const MAX_REDIRECT_URI_LENGTH = 2000;

/** A loopback redirect (RFC 8252 §7.3): http on an IP literal of the loopback interface, any port at the time of the request. */
const LOOPBACK_REDIRECT = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?([/?].*)?$/;

/** A redirect URI with its loopback port taken out (`http://127.0.0.1/cb` for `http://127.0.0.1:51234/cb`); any other unchanged. */
export function withoutLoopbackPort(uri: string): string {
  const loopback = LOOPBACK_REDIRECT.exec(uri);
  return loopback ? `http://${loopback[1]}${loopback[3] ?? ''}` : uri;
}

/**
 * What is wrong with a redirect URI a client registers, or undefined when nothing is (RFC 9700
 * §2.1, RFC 8252 §7): an absolute URI compared exactly, so no wildcard, no fragment and no user
 * information, written as a browser writes it (`https://id.chromiumapp.org/`, not without its
 * slash); `https:`; `http:` only on a loopback IP literal (`127.0.0.1` or `[::1]`, whose port may
 * then be any); or a private-use scheme named after a domain the app owns (`com.example.app:/cb`).
 */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > MAX_REDIRECT_URI_LENGTH) return `is longer than ${MAX_REDIRECT_URI_LENGTH} characters`;
  if (/[\s\u0000-\u001f\u007f*\\]/.test(uri)) return 'must not contain spaces, control characters, backslashes or wildcards (*): it is compared exactly';
  if (!URL.canParse(uri)) return 'is not an absolute URI';
  const url = new URL(uri);
  if (url.hash || uri.includes('#')) return 'must not have a fragment (#…)';
  if (url.username || url.password) return 'must not hold a user name or password';
  if (url.protocol === 'https:' || url.protocol === 'http:') {
    if (url.href !== uri) return `must be written as ${url.href}`;
    if (url.protocol === 'http:' && !LOOPBACK_REDIRECT.test(uri)) return 'may use http: only on the loopback address (http://127.0.0.1 or http://[::1], RFC 8252); use https: otherwise';
    return undefined;
  }
  if (!/^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:/.test(uri)) return 'must be https:, http: on the loopback address, or a private-use scheme named after your domain (com.example.app:/callback)';
  return undefined;
}

/**
 * What is wrong with an origin a client's browser code calls the token, revocation and userinfo
 * endpoints from, or undefined: a browser's serialization of an origin (scheme, host, port; no
 * path), `https:` anywhere, `http:` on the loopback address, or a browser extension's
 * (`chrome-extension://<32 letters a-p>`, `moz-extension://<uuid>`, `safari-web-extension://<id>`).
 */
export function originProblem(origin: string): string | undefined {
  if (/^chrome-extension:\/\/[a-p]{32}$/.test(origin) || /^moz-extension:\/\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(origin)) return undefined;
  if (/^safari-web-extension:\/\/[A-Za-z0-9-]{1,64}$/.test(origin)) return undefined;
  if (!URL.canParse(origin)) return 'is not an origin (scheme://host[:port])';
  const url = new URL(origin);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be https://…, http:// on the loopback address, or a browser extension’s (chrome-extension://…, moz-extension://…)';
  if (url.origin !== origin) return `must be an origin as browsers send it, without a path: ${url.origin}`;
  if (url.protocol === 'http:' && !['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname)) return 'may use http: only on the loopback address (127.0.0.1, [::1] or localhost)';
  return undefined;
}

/** RFC 6749 §2.3.1 client_secret_post: a confidential client's secret in the body (or Basic, in the Authorization header). */
const clientSecret = () => z.optional(param(200));

/** RFC 8628 §3.1. */
export const DeviceAuthorizationRequestSchema = z.object({
  client_id: param(64),
  client_secret: clientSecret(),
  scope: z.optional(scope()),
});
export type DeviceAuthorizationRequest = z.infer<typeof DeviceAuthorizationRequestSchema>;

/** RFC 8628 §3.2. */
export const DeviceAuthorizationResponseSchema = z.object({
  device_code: param(200),
  user_code: param(20),
  verification_uri: z.url(),
  verification_uri_complete: z.url(),
  expires_in: z.int(),
  interval: z.int(),
});
export type DeviceAuthorizationResponse = z.infer<typeof DeviceAuthorizationResponseSchema>;

/** RFC 8628 §3.4. */
export const DeviceCodeTokenRequestSchema = z.object({
  grant_type: z.literal(DEVICE_CODE_GRANT_TYPE),
  device_code: param(200),
  client_id: param(64),
  client_secret: clientSecret(),
});
export type DeviceCodeTokenRequest = z.infer<typeof DeviceCodeTokenRequestSchema>;

/** RFC 6749 §6. `client_id` may instead be in the Authorization header (client_secret_basic). */
export const RefreshTokenRequestSchema = z.object({
  grant_type: z.literal('refresh_token'),
  refresh_token: param(200),
  client_id: z.optional(param(64)),
  client_secret: clientSecret(),
  scope: z.optional(scope()),
});
export type RefreshTokenRequest = z.infer<typeof RefreshTokenRequestSchema>;

/**
 * RFC 6749 §4.4.2, for service accounts (issue #45): the client authenticates with
 * client_secret_basic, client_secret_post, or private_key_jwt (RFC 7523 §2.2: `client_assertion_type`
 * and `client_assertion`).
 */
export const ClientCredentialsTokenRequestSchema = z.object({
  grant_type: z.literal('client_credentials'),
  scope: z.optional(scope()),
  client_id: z.optional(param(200)),
  client_secret: clientSecret(),
  client_assertion_type: z.optional(param(200)),
  client_assertion: z.optional(param(8000)),
});
export type ClientCredentialsTokenRequest = z.infer<typeof ClientCredentialsTokenRequestSchema>;

/** RFC 6749 §4.4.3: a client credentials grant's answer has no refresh token. */
export const ClientCredentialsTokenResponseSchema = z.object({
  access_token: param(200),
  token_type: z.literal('Bearer'),
  expires_in: z.int(),
  scope: z.string(),
});
export type ClientCredentialsTokenResponse = z.infer<typeof ClientCredentialsTokenResponseSchema>;

/**
 * RFC 8693 §2.1, for service accounts (issue #45): a CI's signed OIDC token (`subject_token`, of
 * type `…:token-type:jwt` or `…:id_token`) for an access token of the service account `client_id`
 * names. No client secret: the subject token, checked against the account's trusted issuers, is
 * the credential. `subject_token_type` and `requested_token_type` are checked by the grant, so that
 * an unsupported one is an RFC 6749 §5.2 `invalid_request` naming the supported ones.
 */
export const TokenExchangeTokenRequestSchema = z.object({
  grant_type: z.literal(TOKEN_EXCHANGE_GRANT_TYPE),
  client_id: param(200),
  subject_token: param(8000),
  subject_token_type: param(200),
  requested_token_type: z.optional(param(200)),
  scope: z.optional(scope()),
  actor_token: z.optional(param(8000)),
  actor_token_type: z.optional(param(200)),
  client_secret: clientSecret(),
  client_assertion: z.optional(param(8000)),
  resource: z.optional(param(500)),
  audience: z.optional(param(500)),
});
export type TokenExchangeTokenRequest = z.infer<typeof TokenExchangeTokenRequestSchema>;

/** RFC 8693 §2.2.1: the issued token is an access token; no refresh token. */
export const TokenExchangeResponseSchema = z.object({
  access_token: param(200),
  issued_token_type: z.literal(ACCESS_TOKEN_TOKEN_TYPE),
  token_type: z.literal('Bearer'),
  expires_in: z.int(),
  scope: z.string(),
});
export type TokenExchangeResponse = z.infer<typeof TokenExchangeResponseSchema>;

/**
 * RFC 7636 §4.1: 43 to 128 characters of [A-Z] / [a-z] / [0-9] / "-" / "." / "_" / "~"; and
 * an S256 challenge is the verifier's SHA-256 in base64url, 43 characters.
 */
export const PKCE_VERIFIER_PATTERN = /^[A-Za-z0-9._~-]{43,128}$/;
export const PKCE_S256_CHALLENGE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** RFC 6749 §4.1.3 with RFC 7636 §4.5. `client_id` may instead be in the Authorization header (client_secret_basic). */
export const AuthorizationCodeTokenRequestSchema = z.object({
  grant_type: z.literal('authorization_code'),
  code: param(200),
  redirect_uri: param(2000),
  code_verifier: z.string().check(z.regex(PKCE_VERIFIER_PATTERN, 'must be 43 to 128 characters of A-Z, a-z, 0-9, "-", ".", "_" and "~" (RFC 7636)')),
  client_id: z.optional(param(64)),
  client_secret: clientSecret(),
});
export type AuthorizationCodeTokenRequest = z.infer<typeof AuthorizationCodeTokenRequestSchema>;

/** RFC 6749 §5.1; `id_token` for a grant of `openid` (OpenID Connect Core §3.1.3.3). */
export const TokenResponseSchema = z.object({
  access_token: param(200),
  token_type: z.literal('Bearer'),
  expires_in: z.int(),
  refresh_token: param(200),
  scope: z.optional(z.string()),
  id_token: z.optional(z.string()),
});
export type TokenResponse = z.infer<typeof TokenResponseSchema>;

/** A hint the server may use or not (RFC 7009 §2.1, RFC 7662 §2.1): the token's prefix says its kind anyway. */
const tokenTypeHint = () => z.optional(z.string().check(z.maxLength(100)));

/** RFC 7009 §2.1 (a public client names itself with client_id; a confidential one authenticates as at the token endpoint). */
export const RevocationRequestSchema = z.object({
  token: param(200),
  token_type_hint: tokenTypeHint(),
  client_id: z.optional(param(64)),
  client_secret: clientSecret(),
});
export type RevocationRequest = z.infer<typeof RevocationRequestSchema>;

/** RFC 7662 §2.1. */
export const IntrospectionRequestSchema = z.object({
  token: param(200),
  token_type_hint: tokenTypeHint(),
});
export type IntrospectionRequest = z.infer<typeof IntrospectionRequestSchema>;

/** RFC 7662 §2.2: `{active: false}` alone for a token that is not active. */
export const IntrospectionResponseSchema = z.object({
  active: z.boolean(),
  sub: z.optional(z.string()),
  client_id: z.optional(z.string()),
  username: z.optional(z.string()),
  token_type: z.optional(z.string()),
  exp: z.optional(z.int()),
  iat: z.optional(z.int()),
  scope: z.optional(z.string()),
});
export type IntrospectionResponse = z.infer<typeof IntrospectionResponseSchema>;

/** RFC 8414 §2, what this server publishes. */
export const AuthorizationServerMetadataSchema = z.object({
  issuer: z.url(),
  authorization_endpoint: z.url(),
  device_authorization_endpoint: z.url(),
  token_endpoint: z.url(),
  revocation_endpoint: z.url(),
  introspection_endpoint: z.url(),
  userinfo_endpoint: z.url(),
  jwks_uri: z.url(),
  grant_types_supported: z.array(z.string()),
  response_types_supported: z.array(z.string()),
  response_modes_supported: z.array(z.string()),
  code_challenge_methods_supported: z.array(z.string()),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  scopes_supported: z.array(z.string()),
  revocation_endpoint_auth_methods_supported: z.array(z.string()),
  /** RFC 8414 §2: the algorithms a private_key_jwt client assertion may be signed with (service accounts, issue #45). */
  token_endpoint_auth_signing_alg_values_supported: z.array(z.string()),
  /** RFC 9207: every authorization response carries `iss`. */
  authorization_response_iss_parameter_supported: z.boolean(),
  service_documentation: z.url(),
});
export type AuthorizationServerMetadata = z.infer<typeof AuthorizationServerMetadataSchema>;

/** OpenID Connect Discovery 1.0 §3: the RFC 8414 document and what OpenID Connect adds. */
export const OpenIdConfigurationSchema = z.object({
  ...AuthorizationServerMetadataSchema.shape,
  subject_types_supported: z.array(z.string()),
  id_token_signing_alg_values_supported: z.array(z.string()),
  claims_supported: z.array(z.string()),
  prompt_values_supported: z.array(z.string()),
  claims_parameter_supported: z.boolean(),
  request_parameter_supported: z.boolean(),
  request_uri_parameter_supported: z.boolean(),
  /** OpenID Connect Back-Channel Logout 1.0: logout tokens are sent, and whether they carry `sid`. */
  backchannel_logout_supported: z.boolean(),
  backchannel_logout_session_supported: z.boolean(),
});
export type OpenIdConfiguration = z.infer<typeof OpenIdConfigurationSchema>;

/** OpenID Connect Core §5.3.2: `sub` always, the rest as the token's scopes allow (`profile`: name; `email`: address and whether it is proven). */
export const UserInfoResponseSchema = z.object({
  sub: z.string(),
  name: z.optional(z.string()),
  email: z.optional(z.string()),
  email_verified: z.optional(z.boolean()),
  /** With `orgs` (issue #44): the person's organizations and their role in each. */
  orgs: z.optional(z.array(OrganizationSchema)),
});
export type UserInfoResponse = z.infer<typeof UserInfoResponseSchema>;
