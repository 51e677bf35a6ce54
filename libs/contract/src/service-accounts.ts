// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { hasUnsafeText, UNSAFE_TEXT_MESSAGE } from './text.js';

/**
 * Service accounts (issue #45): machine identities of one organization, managed by its admins under
 * `/api/orgs/{slug}/service-accounts`, that obtain short-lived access tokens with the client
 * credentials grant (RFC 6749 §4.4) at `/oauth/token`.
 */

/**
 * What a service account may hold: `profile` (its name on /me) and the organization's product
 * scopes (`orgs`). Never `admin` nor `tokens`: a machine never administers the service nor mints
 * tokens, and never `openid`/`email`, which speak of a person.
 */
export const SERVICE_ACCOUNT_SCOPES = ['profile', 'orgs'] as const;
export type ServiceAccountScope = (typeof SERVICE_ACCOUNT_SCOPES)[number];

/** A service account's client_id starts with this, so it is told from an OAuth client's at a glance. */
export const SERVICE_ACCOUNT_CLIENT_ID_PREFIX = 'psa_';

/** A service account's client secret starts with this (secret scanners). */
export const SERVICE_ACCOUNT_SECRET_PREFIX = 'prsa_';

/** The longest a client credentials token lives (RFC 6749 §4.4.3: no refresh token; ask again). */
export const SERVICE_ACCOUNT_TOKEN_TTL_SECONDS = 3600;

/** The furthest ahead a private_key_jwt assertion's `exp` may be (RFC 7523 §3: short-lived). */
export const CLIENT_ASSERTION_MAX_LIFETIME_SECONDS = 300;

export const CLIENT_CREDENTIALS_GRANT_TYPE = 'client_credentials';
export const JWT_BEARER_CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

const accountName = z.string().check(z.trim(), z.minLength(1), z.maxLength(80), z.refine((text) => !hasUnsafeText(text), UNSAFE_TEXT_MESSAGE));
const scopes = z.array(z.enum(SERVICE_ACCOUNT_SCOPES)).check(z.maxLength(SERVICE_ACCOUNT_SCOPES.length));
const isoTimestamp = z.iso.datetime({ offset: true });

/** POST /api/orgs/{slug}/service-accounts. */
export const CreateServiceAccountRequestSchema = z.strictObject({ name: accountName, scopes });
export type CreateServiceAccountRequest = z.infer<typeof CreateServiceAccountRequestSchema>;

/** PATCH /api/orgs/{slug}/service-accounts/{id}: any of them. */
export const UpdateServiceAccountRequestSchema = z
  .strictObject({ name: z.optional(accountName), scopes: z.optional(scopes), disabled: z.optional(z.boolean()) })
  .check(z.refine((body) => Object.keys(body).length > 0, 'must change something: name, scopes or disabled'));
export type UpdateServiceAccountRequest = z.infer<typeof UpdateServiceAccountRequestSchema>;

/** POST …/{id}/secrets. */
export const CreateServiceAccountSecretRequestSchema = z.strictObject({ expiresInDays: z.optional(z.int().check(z.minimum(1), z.maximum(730))) });
export type CreateServiceAccountSecretRequest = z.infer<typeof CreateServiceAccountSecretRequestSchema>;

/** POST …/{id}/keys: a public JWK (RSA or EC; never a private one). */
export const AddServiceAccountKeyRequestSchema = z.strictObject({ jwk: z.record(z.string(), z.unknown()) });
export type AddServiceAccountKeyRequest = z.infer<typeof AddServiceAccountKeyRequestSchema>;

/**
 * Workload identity federation (issue #45): an organization's admins trust an external OIDC
 * issuer (a CI's: GitHub Actions, GitLab CI) for a service account, under conditions on its
 * token's claims; the CI then exchanges its own signed token for the account's short-lived access
 * token at `/oauth/token` (RFC 8693 token exchange), with no secret stored anywhere.
 */
export const TOKEN_EXCHANGE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** RFC 8693 §3: token type identifiers. A subject token is a JWT (or an ID token, which is one). */
export const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
export const ID_TOKEN_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
export const ACCESS_TOKEN_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
export const SUBJECT_TOKEN_TYPES = [JWT_TOKEN_TYPE, ID_TOKEN_TOKEN_TYPE] as const;

/** The oldest a subject token may be (from its `iat`): a CI mints one per job, minutes before it is exchanged. */
export const SUBJECT_TOKEN_MAX_AGE_SECONDS = 3600;

/** The most conditions a federation may have, and the longest claim name and pattern. */
export const FEDERATION_MAX_CONDITIONS = 10;
const CLAIM_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,99}$/;
/** Checked by the exchange itself: a condition on them would say nothing or be ignored. */
const RESERVED_CLAIMS = ['iss', 'aud', 'exp', 'nbf', 'iat', 'jti'];
const claimPattern = z.string().check(z.minLength(1), z.maxLength(500), z.refine((text) => !hasUnsafeText(text), UNSAFE_TEXT_MESSAGE));

/**
 * POST /api/orgs/{slug}/service-accounts/{id}/federations. `conditions`: claim name → exact value
 * or a pattern where `*` matches any run of characters (`/` included); at least one (`sub` or a
 * named claim), so that no federation trusts every token of an issuer. `audience` defaults to this
 * service's issuer (its PUBLIC_URL).
 */
export const CreateServiceAccountFederationRequestSchema = z.strictObject({
  issuer: z.string().check(z.trim(), z.minLength(1), z.maxLength(500)),
  audience: z.optional(z.string().check(z.trim(), z.minLength(1), z.maxLength(500))),
  conditions: z.record(z.string(), claimPattern).check(
    z.refine((c) => Object.keys(c).every((name) => CLAIM_NAME.test(name)), 'each key must be a claim name (letters, digits, "_", ".", ":", "-"; at most 100)'),
    z.refine(
      (c) => !Object.keys(c).some((name) => RESERVED_CLAIMS.includes(name)),
      'iss, aud, exp, nbf, iat and jti are checked by the exchange itself: give the issuer as `issuer` and the audience as `audience`',
    ),
    z.refine((c) => Object.keys(c).length > 0, 'needs at least one condition (`sub`, or a named claim such as `repository`): a federation without one would trust every token of the issuer'),
    z.refine((c) => Object.keys(c).length <= FEDERATION_MAX_CONDITIONS, `at most ${FEDERATION_MAX_CONDITIONS} conditions`),
  ),
});
export type CreateServiceAccountFederationRequest = z.infer<typeof CreateServiceAccountFederationRequestSchema>;

/** A trusted issuer of a service account, as its admins see it. */
export const ServiceAccountFederationSchema = z.object({
  id: z.string(),
  issuer: z.string(),
  audience: z.string(),
  conditions: z.record(z.string(), z.string()),
  createdAt: isoTimestamp,
});
export type ServiceAccountFederation = z.infer<typeof ServiceAccountFederationSchema>;

const lastUse = { lastUsedAt: z.nullable(isoTimestamp), lastUsedIp: z.nullable(z.string()) };

export const ServiceAccountSecretSchema = z.object({ id: z.string(), createdAt: isoTimestamp, expiresAt: z.nullable(isoTimestamp), ...lastUse });
export type ServiceAccountSecret = z.infer<typeof ServiceAccountSecretSchema>;

export const ServiceAccountKeySchema = z.object({ id: z.string(), kid: z.string(), alg: z.string(), createdAt: isoTimestamp, ...lastUse });
export type ServiceAccountKey = z.infer<typeof ServiceAccountKeySchema>;

/** A service account as its organization's admins see it; `id` is the `user.id` /me answers for its tokens. */
export const ServiceAccountSchema = z.object({
  id: z.string(),
  clientId: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  disabled: z.boolean(),
  createdAt: isoTimestamp,
  secrets: z.array(ServiceAccountSecretSchema),
  keys: z.array(ServiceAccountKeySchema),
  federations: z.array(ServiceAccountFederationSchema),
});
export type ServiceAccount = z.infer<typeof ServiceAccountSchema>;

/** 201 of POST /api/orgs/{slug}/service-accounts. */
export const CreatedServiceAccountSchema = z.object({ id: z.string(), clientId: z.string(), name: z.string(), scopes: z.array(z.string()) });
export type CreatedServiceAccount = z.infer<typeof CreatedServiceAccountSchema>;

/** 201 of POST …/secrets: the secret, shown this once. */
export const CreatedServiceAccountSecretSchema = z.object({ id: z.string(), clientSecret: z.string(), expiresAt: z.nullable(isoTimestamp) });
export type CreatedServiceAccountSecret = z.infer<typeof CreatedServiceAccountSecretSchema>;

/** 201 of POST …/keys. */
export const AddedServiceAccountKeySchema = z.object({ id: z.string(), kid: z.string() });
export type AddedServiceAccountKey = z.infer<typeof AddedServiceAccountKeySchema>;

