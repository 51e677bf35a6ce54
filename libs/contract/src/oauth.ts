// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { DEVICE_CODE_GRANT_TYPE } from './constants.js';

/**
 * The OAuth 2.0 surface's wire shapes (RFC 8414, 8628, 6749 §5, 7009, 7662), in the RFCs'
 * snake_case. Requests are form-encoded; unknown parameters are ignored, as RFC 6749 §3.2
 * asks, so the request schemas are not strict.
 */

const param = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));
/** RFC 6749 §3.3: space-separated scope tokens of printable ASCII without `"` and `\`. */
const scope = () => z.string().check(z.maxLength(500), z.regex(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/, 'must be space-separated scope tokens'));

export const ClientIdSchema = z.string().check(z.regex(/^[a-z0-9][a-z0-9._-]{2,63}$/, 'must be 3 to 64 lower-case letters, digits, ".", "_" or "-"'));

/** RFC 8628 §3.1. */
export const DeviceAuthorizationRequestSchema = z.object({
  client_id: param(64),
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
});
export type DeviceCodeTokenRequest = z.infer<typeof DeviceCodeTokenRequestSchema>;

/** RFC 6749 §6. */
export const RefreshTokenRequestSchema = z.object({
  grant_type: z.literal('refresh_token'),
  refresh_token: param(200),
  client_id: param(64),
  scope: z.optional(scope()),
});
export type RefreshTokenRequest = z.infer<typeof RefreshTokenRequestSchema>;

/** RFC 6749 §5.1. */
export const TokenResponseSchema = z.object({
  access_token: param(200),
  token_type: z.literal('Bearer'),
  expires_in: z.int(),
  refresh_token: param(200),
  scope: z.optional(z.string()),
});
export type TokenResponse = z.infer<typeof TokenResponseSchema>;

/** A hint the server may use or not (RFC 7009 §2.1, RFC 7662 §2.1): the token's prefix says its kind anyway. */
const tokenTypeHint = () => z.optional(z.string().check(z.maxLength(100)));

/** RFC 7009 §2.1 (a public client names itself with client_id). */
export const RevocationRequestSchema = z.object({
  token: param(200),
  token_type_hint: tokenTypeHint(),
  client_id: z.optional(param(64)),
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
  device_authorization_endpoint: z.url(),
  token_endpoint: z.url(),
  revocation_endpoint: z.url(),
  introspection_endpoint: z.url(),
  grant_types_supported: z.array(z.string()),
  response_types_supported: z.array(z.string()),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  scopes_supported: z.array(z.string()),
  revocation_endpoint_auth_methods_supported: z.array(z.string()),
  service_documentation: z.url(),
});
export type AuthorizationServerMetadata = z.infer<typeof AuthorizationServerMetadataSchema>;
