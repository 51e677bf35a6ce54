// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { CLI_SCOPES, type Scope, SCOPES } from './constants.js';
import { ORG_ROLES, OrganizationSchema, OrgSlugSchema } from './organizations.js';
import { ClientIdSchema, originProblem, redirectUriProblem } from './oauth.js';
import { hasUnsafeText, looksLikeEmail, UNSAFE_TEXT_MESSAGE } from './text.js';

/**
 * Every wire shape of the contract, defined once. The API validates requests
 * with these schemas; the CLI parses responses and the session file with them.
 * Written with zod/mini, which tree-shakes: the CLI bundles only what it uses
 * and starts fast.
 */

const isoTimestamp = z.iso.datetime({ offset: true });
const nonEmpty = () => z.string().check(z.minLength(1));
/** Text a person reads (names, labels, hosts): trimmed, bounded, no control or bidi control characters (text.ts). */
const shortText = (max: number) =>
  z.string().check(z.trim(), z.minLength(1), z.maxLength(max), z.refine((text) => !hasUnsafeText(text), UNSAFE_TEXT_MESSAGE));
const positiveInt = () => z.int().check(z.positive());
/** An e-mail address a person gives: trimmed, then the practical RFC 5321 subset (text.ts looksLikeEmail), the address stored and delivered. */
const emailAddress = () => z.string().check(z.trim(), z.refine(looksLikeEmail, 'must be an e-mail address (name@example.com, nothing around it)'));

/** Normalized user (seed §2.1). */
export const UserSchema = z.object({
  id: nonEmpty(),
  email: nonEmpty(),
  name: z.string(),
});
export type User = z.infer<typeof UserSchema>;

/** Body of POST /api/cli/auth/device/start. Optional: shown on the approval page. */
export const DeviceStartRequestSchema = z.strictObject({
  clientName: z.optional(shortText(100)),
  hostname: z.optional(shortText(255)),
  /**
   * What the login asks to be granted (`prospect auth:login --scopes`); absent: CLI_DEFAULT_SCOPES.
   * Only what the CLI's client may have (CLI_SCOPES): these routes start the CLI's logins, and a
   * scope its client is not allowed (`openid`, `email`) is never granted through them.
   * `admin` is approved only in sudo mode and lasts ADMIN_GRANT_SECONDS.
   */
  scopes: z.optional(z.array(z.enum(CLI_SCOPES as [Scope, ...Scope[]])).check(z.minLength(1), z.maxLength(CLI_SCOPES.length))),
});
export type DeviceStartRequest = z.infer<typeof DeviceStartRequestSchema>;

/** Response of POST /api/cli/auth/device/start (seed §2.2). */
export const DeviceStartResponseSchema = z.object({
  deviceCode: nonEmpty(),
  userCode: nonEmpty(),
  verificationUrl: z.url({ protocol: /^https?$/ }),
  intervalSeconds: positiveInt(),
  expiresInSeconds: positiveInt(),
});
export type DeviceStartResponse = z.infer<typeof DeviceStartResponseSchema>;

/** Body of POST /api/cli/auth/device/poll. */
export const DevicePollRequestSchema = z.strictObject({
  deviceCode: z.string().check(z.minLength(1), z.maxLength(200)),
});
export type DevicePollRequest = z.infer<typeof DevicePollRequestSchema>;

/** Body of POST /api/cli/auth/device/cancel: the terminal stops waiting (Ctrl-C, a timeout). */
export const DeviceCancelRequestSchema = DevicePollRequestSchema;
export type DeviceCancelRequest = DevicePollRequest;

/** An authorized poll: the token pair and who approved it. Also the answer of POST /api/cli/auth/refresh. */
export const AuthorizedResponseSchema = z.strictObject({
  status: z.literal('authorized'),
  accessToken: nonEmpty(),
  refreshToken: z.optional(nonEmpty()),
  expiresAt: isoTimestamp,
  user: UserSchema,
});
export type AuthorizedResponse = z.infer<typeof AuthorizedResponseSchema>;

/** Response of POST /api/cli/auth/device/poll: exactly one of three shapes (seed §2.3, §4.2). */
export const DevicePollResponseSchema = z.discriminatedUnion('status', [
  z.strictObject({ status: z.literal('pending') }),
  z.strictObject({ status: z.literal('denied') }),
  AuthorizedResponseSchema,
]);
export type DevicePollResponse = z.infer<typeof DevicePollResponseSchema>;

/** Body of POST /api/cli/auth/refresh: the refresh token, used once (it is rotated). */
export const RefreshRequestSchema = z.strictObject({
  refreshToken: z.string().check(z.minLength(1), z.maxLength(200)),
});
export type RefreshRequest = z.infer<typeof RefreshRequestSchema>;

/** Response of GET /api/cli/auth/me as this API sends it (the seed's top-level variant). */
export const PersonMeResponseSchema = z.object({
  user: UserSchema,
  expiresAt: isoTimestamp,
  /**
   * For a token made with another token or a CLI session: which one, in words ("the Prospect CLI
   * session on laptop", "the token “CI runner”"). Absent for a sign-in's own token and one made on the site.
   */
  madeWith: z.optional(z.string()),
  /** For a token with the `orgs` scope (issue #44): the organizations the person belongs to, with their role, read afresh at each request. */
  organizations: z.optional(z.array(OrganizationSchema)),
});

/**
 * /me for a service account's token (issue #45): it has no address (`user.email` null, only here),
 * says what it is beside `user`, and names the one organization it belongs to.
 */
export const ServiceAccountMeResponseSchema = z.object({
  user: z.object({ id: nonEmpty(), email: z.null(), name: z.string() }),
  kind: z.literal('service_account'),
  organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }),
  expiresAt: isoTimestamp,
});
export type ServiceAccountMeResponse = z.infer<typeof ServiceAccountMeResponseSchema>;

export const MeResponseSchema = z.union([PersonMeResponseSchema, ServiceAccountMeResponseSchema]);
export type MeResponse = z.infer<typeof MeResponseSchema>;

/** Body of POST /api/cli/auth/token (seed §4.4). */
export const IssueTokenRequestSchema = z.strictObject({
  /** Admins only: issue for this user instead of oneself. */
  userEmail: z.optional(emailAddress()),
  label: z.optional(shortText(100)),
  expiresInSeconds: z.optional(positiveInt().check(z.maximum(10 * 365 * 24 * 3600))),
});
export type IssueTokenRequest = z.infer<typeof IssueTokenRequestSchema>;

/** Response of POST /api/cli/auth/token. */
export const IssuedTokenResponseSchema = z.object({
  accessToken: nonEmpty(),
  refreshToken: z.optional(nonEmpty()),
  expiresAt: isoTimestamp,
  user: UserSchema,
});
export type IssuedTokenResponse = z.infer<typeof IssuedTokenResponseSchema>;

/** The one error body of every non-2xx answer. */
export const ErrorBodySchema = z.object({
  statusCode: z.int(),
  error: z.string(),
  message: z.string(),
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/** The CLI's session file (seed §2.4): exactly these fields. */
export const SessionFileSchema = z.strictObject({
  accessToken: nonEmpty(),
  refreshToken: z.optional(nonEmpty()),
  apiBaseUrl: z.url({ protocol: /^https?$/ }),
  user: UserSchema,
  expiresAt: isoTimestamp,
  createdAt: isoTimestamp,
  /**
   * The organization this account's commands act for (`prospect org:switch`, issue #44), sent as
   * ORGANIZATION_HEADER; its name and the person's role as the server said them when it was chosen.
   * Absent: none. Optional, so a session file from before organizations stays valid.
   */
  organization: z.optional(
    z.strictObject({ slug: OrgSlugSchema, name: shortText(80), role: z.enum(ORG_ROLES) }),
  ),
});
export type SessionFile = z.infer<typeof SessionFileSchema>;

/** Body of POST /api/admin/sign-in-blocks/clear (admins): lift an account's sign-in block. */
export const ClearSignInBlockRequestSchema = z.strictObject({
  email: z.string().check(z.trim(), z.minLength(3), z.maxLength(320)),
});
export type ClearSignInBlockRequest = z.infer<typeof ClearSignInBlockRequestSchema>;

/** Its answer: whether the account had failed sign-ins counted (and so a block, or one coming). */
export const ClearSignInBlockResponseSchema = z.object({ cleared: z.boolean() });
export type ClearSignInBlockResponse = z.infer<typeof ClearSignInBlockResponseSchema>;

/** A scope of the registry (constants.ts SCOPES), as the admin API names them. */
const scopeName = z.enum(Object.keys(SCOPES) as [Scope, ...Scope[]]);
/** What a client may ask for: one or more scopes of the registry, each once. */
const allowedScopeList = () =>
  z.array(scopeName).check(z.minLength(1), z.maxLength(Object.keys(SCOPES).length), z.refine((scopes) => new Set(scopes).size === scopes.length, 'must name each scope once'));
const clientName = shortText(100);

/** `public`: no secret, PKCE only (a browser extension, a desktop tool); `confidential`: a server that keeps a secret. */
export const CLIENT_TYPES = ['public', 'confidential'] as const;
export type ClientType = (typeof CLIENT_TYPES)[number];

/** At most this many redirect URIs and allowed origins per client. */
export const MAX_CLIENT_URIS = 10;

const redirectUri = z.string().check(z.refine((uri) => redirectUriProblem(uri) === undefined, { error: (issue) => `${String(issue.input)} ${redirectUriProblem(String(issue.input))}` }));
const allowedOrigin = z.string().check(z.refine((origin) => originProblem(origin) === undefined, { error: (issue) => `${String(issue.input)} ${originProblem(String(issue.input))}` }));
const backchannelLogoutUri = z.string().check(
  z.maxLength(2000),
  z.refine((value) => URL.canParse(value) && ['https:', 'http:'].includes(new URL(value).protocol) && !new URL(value).hash, 'must be an https:// URL without a fragment'),
);
const redirectUris = () => z.array(redirectUri).check(z.maxLength(MAX_CLIENT_URIS));
const allowedOrigins = () => z.array(allowedOrigin).check(z.maxLength(MAX_CLIENT_URIS));

/** An OAuth client as the admin API shows it (GET /api/admin/clients). */
export const AdminClientSchema = z.object({
  id: z.string(),
  name: z.string(),
  /** What it may ask for; a sign-in that asks for nothing gets all of them. */
  allowedScopes: z.array(scopeName),
  /** `prospect-cli`: cannot be disabled or deleted, and its scopes are fixed. */
  builtIn: z.boolean(),
  disabled: z.boolean(),
  createdAt: isoTimestamp,
  type: z.enum(CLIENT_TYPES),
  /** Where the authorization code flow may send people back (exact; a loopback one on any port). None: no code flow. */
  redirectUris: z.array(z.string()),
  /** The browser origins that may call the token, revocation and userinfo endpoints for it (CORS). */
  allowedOrigins: z.array(z.string()),
  /** Where its back-channel logout tokens go (OpenID Connect Back-Channel Logout 1.0) when a grant of it ends; null: none. */
  backchannelLogoutUri: z.optional(z.nullable(z.string())),
  /** A confidential client's secret: in the answer that made it (registration, a new secret), and never again. */
  clientSecret: z.optional(z.string()),
});
export type AdminClient = z.infer<typeof AdminClientSchema>;

/**
 * POST /api/admin/clients: register a client. `type` is `public` unless said (a confidential one
 * gets a secret, returned once as `clientSecret`); without `redirectUris` it has no code flow.
 */
export const RegisterClientRequestSchema = z.strictObject({
  id: ClientIdSchema,
  name: clientName,
  allowedScopes: allowedScopeList(),
  type: z.optional(z.enum(CLIENT_TYPES)),
  redirectUris: z.optional(redirectUris()),
  allowedOrigins: z.optional(allowedOrigins()),
  /** https (http on loopback with WEBHOOKS_ALLOW_INSECURE_URLS), no private address: the webhook URL rules. */
  backchannelLogoutUri: z.optional(z.nullable(backchannelLogoutUri)),
});
export type RegisterClientRequest = z.infer<typeof RegisterClientRequestSchema>;

/** PATCH /api/admin/clients/{id}: any of a new name, new allowed scopes, redirect URIs or origins, disabled or not. */
export const UpdateClientRequestSchema = z
  .strictObject({
    name: z.optional(clientName),
    allowedScopes: z.optional(allowedScopeList()),
    redirectUris: z.optional(redirectUris()),
    allowedOrigins: z.optional(allowedOrigins()),
    disabled: z.optional(z.boolean()),
    /** null: no more logout tokens. */
    backchannelLogoutUri: z.optional(z.nullable(backchannelLogoutUri)),
  })
  .check(z.refine((body) => Object.keys(body).length > 0, 'must change something: name, allowedScopes, redirectUris, allowedOrigins, backchannelLogoutUri or disabled'));
export type UpdateClientRequest = z.infer<typeof UpdateClientRequestSchema>;

/** POST /api/admin/clients/{id}/secret: a confidential client's new secret, returned once; the old one stops working. */
export const ClientSecretResponseSchema = z.object({ clientSecret: z.string() });
export type ClientSecretResponse = z.infer<typeof ClientSecretResponseSchema>;

/** A person as the admin API shows them (GET /api/admin/users). */
export const AdminUserSchema = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string(),
  admin: z.boolean(),
  disabled: z.boolean(),
  /** Whether the owner followed a mailed link (verification, invitation or reset). */
  emailVerified: z.boolean(),
  /** An invitation not yet accepted: the account has no password. */
  invited: z.boolean(),
  /** An authenticator app is set up for the web sign-in. */
  secondFactor: z.boolean(),
  createdAt: isoTimestamp,
  lastSignInAt: z.nullable(isoTimestamp),
  /** Device sessions and long-lived tokens still live. */
  activeCliSessions: z.int(),
});
export type AdminUser = z.infer<typeof AdminUserSchema>;

/** GET /api/admin/users: one page of people, newest first. */
export const AdminUserPageSchema = z.object({
  users: z.array(AdminUserSchema),
  /** How many match the search in all. */
  total: z.int(),
  page: z.int(),
  perPage: z.int(),
});
export type AdminUserPage = z.infer<typeof AdminUserPageSchema>;

/** PATCH /api/admin/users/{id}: disable or enable, make or remove admin. */
export const UpdateUserRequestSchema = z
  .strictObject({
    disabled: z.optional(z.boolean()),
    admin: z.optional(z.boolean()),
  })
  .check(z.refine((body) => Object.keys(body).length > 0, 'must change something: disabled or admin'));
export type UpdateUserRequest = z.infer<typeof UpdateUserRequestSchema>;

/** POST /api/admin/users: invite a person by e-mail (they choose their password from the mail). */
export const InviteUserRequestSchema = z.strictObject({
  email: emailAddress(),
  name: shortText(100),
});
export type InviteUserRequest = z.infer<typeof InviteUserRequestSchema>;

/**
 * GET /api/health/live: the process serves, and which version of the service it is (the
 * CLI's `prospect --version --verify` shows it). An older server answers without `version`.
 */
export const LiveAnswerSchema = z.object({
  status: z.literal('ok'),
  version: z.optional(z.string().check(z.maxLength(100))),
});
export type LiveAnswer = z.infer<typeof LiveAnswerSchema>;
