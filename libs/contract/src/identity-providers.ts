// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { hasUnsafeText, UNSAFE_TEXT_MESSAGE } from './text.js';

/**
 * The admin API of identity providers (issue #34): a team's own OpenID provider that people sign
 * in through (`/api/admin/identity-providers`). The redirect URI to register at the provider is
 * `{PUBLIC_URL}/login/sso/{id}/callback`.
 */

/** The provider's id: its slug in URLs (`/login/sso/{id}`), 2 to 40 lower-case letters, digits or "-". */
export const IdentityProviderIdSchema = z.string().check(z.regex(/^[a-z0-9][a-z0-9-]{1,39}$/, 'must be 2 to 40 lower-case letters, digits or "-", the first a letter or digit'));

/** Presets that fill in the issuer: Google, Microsoft Entra ID (a tenant), or any other (`generic`: the issuer given). */
export const IDENTITY_PROVIDER_PRESETS = ['google', 'microsoft', 'generic'] as const;
export type IdentityProviderPreset = (typeof IDENTITY_PROVIDER_PRESETS)[number];

/** The issuer a preset stands for (Microsoft: of one tenant, its id or its primary domain). */
export function presetIssuer(preset: 'google' | 'microsoft', tenant?: string): string {
  return preset === 'google' ? 'https://accounts.google.com' : `https://login.microsoftonline.com/${tenant ?? ''}/v2.0`;
}

/** A Microsoft Entra tenant: its GUID or one of its domains (not `common` or `organizations`, whose tokens name each tenant as their issuer). */
const tenant = z
  .string()
  .check(
    z.trim(),
    z.regex(/^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+)$/i, 'must be the tenant id (a GUID) or one of its domains'),
    z.refine((t) => !['common', 'organizations', 'consumers'].includes(t.toLowerCase()), 'must be one tenant, not common, organizations or consumers'),
  );

/** A mail domain people of the provider have, lower case (`example.com`; an international one as `xn--…`). */
export const EmailDomainSchema = z
  .string()
  .check(
    z.trim(),
    z.toLowerCase(),
    z.maxLength(253),
    z.regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/, 'must be a domain such as example.com'),
  );

/** RFC 6749 §3.3 scope tokens; `openid` must be among them. */
const scopes = z
  .array(z.string().check(z.regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,100}$/, 'must be scope tokens')))
  .check(
    z.minLength(1),
    z.maxLength(20),
    z.refine((list) => list.includes('openid'), 'must include openid'),
  );

const displayName = z.string().check(z.trim(), z.minLength(1), z.maxLength(60), z.refine((text) => !hasUnsafeText(text), UNSAFE_TEXT_MESSAGE));
const clientId = z.string().check(z.trim(), z.minLength(1), z.maxLength(500), z.regex(/^[\x21-\x7E]+$/, 'must be printable ASCII without spaces'));
const clientSecret = z.string().check(z.minLength(1), z.maxLength(2000), z.regex(/^[\x20-\x7E]+$/, 'must be printable ASCII'));
const emailDomains = z.array(EmailDomainSchema).check(z.minLength(1), z.maxLength(50));
/**
 * The provider's `acr` values that mean its sign-in took a second factor (an exact match, as the
 * provider documents them: `urn:okta:loa:2fa:any`, `http://schemas.openid.net/pape/policies/2007/06/multi-factor`).
 */
const mfaAcrValues = z.array(z.string().check(z.trim(), z.minLength(1), z.maxLength(200), z.regex(/^[\x21-\x7E]+$/, 'must be printable ASCII without spaces'))).check(z.maxLength(20));

/** POST /api/admin/identity-providers. */
export const CreateIdentityProviderRequestSchema = z
  .strictObject({
    id: IdentityProviderIdSchema,
    displayName,
    /** Default `generic`, which needs `issuer`. */
    preset: z.optional(z.enum(IDENTITY_PROVIDER_PRESETS)),
    /** Microsoft only. */
    tenant: z.optional(tenant),
    /** https:// (http:// only for localhost and loopback addresses, for development and tests); discovered through `/.well-known/openid-configuration`. */
    issuer: z.optional(z.string().check(z.trim(), z.minLength(1), z.maxLength(500))),
    clientId,
    /** Kept sealed; never shown again. */
    clientSecret,
    /** Default `openid email profile`. */
    scopes: z.optional(scopes),
    /** The addresses it may sign in (and, with `allowSignUp`, create accounts for). */
    emailDomains,
    /** People with these domains must use it: no password sign-in, no reset mail, no password set by invitation. */
    enforce: z.optional(z.boolean()),
    /** A first sign-in creates an account (for a verified address in `emailDomains`). */
    allowSignUp: z.optional(z.boolean()),
    /** Default none: only an `amr` of RFC 8176 that says so (`mfa`, or two methods one of them not a secret) counts as a second factor. */
    mfaAcrValues: z.optional(mfaAcrValues),
  })
  .check(
    z.refine((body) => (body.preset ?? 'generic') !== 'generic' || body.issuer !== undefined, { error: 'issuer is required for a generic provider', path: ['issuer'] }),
    z.refine((body) => body.preset !== 'microsoft' || body.tenant !== undefined, { error: 'tenant is required for Microsoft', path: ['tenant'] }),
    z.refine((body) => body.preset === undefined || body.preset === 'generic' || body.issuer === undefined, { error: 'a preset fills in the issuer: give one or the other', path: ['issuer'] }),
  );
export type CreateIdentityProviderRequest = z.infer<typeof CreateIdentityProviderRequestSchema>;

/** PATCH /api/admin/identity-providers/{id}: any of these. The issuer stays (links are by issuer and subject). */
export const UpdateIdentityProviderRequestSchema = z
  .strictObject({
    displayName: z.optional(displayName),
    clientId: z.optional(clientId),
    clientSecret: z.optional(clientSecret),
    scopes: z.optional(scopes),
    emailDomains: z.optional(emailDomains),
    enforce: z.optional(z.boolean()),
    allowSignUp: z.optional(z.boolean()),
    mfaAcrValues: z.optional(mfaAcrValues),
    /** Disabling refuses its sign-ins and ends every browser session it started. */
    disabled: z.optional(z.boolean()),
  })
  .check(z.refine((body) => Object.keys(body).length > 0, 'must change something'));
export type UpdateIdentityProviderRequest = z.infer<typeof UpdateIdentityProviderRequestSchema>;

/** An identity provider as the admin API shows it (never its secret). */
export const AdminIdentityProviderSchema = z.object({
  id: z.string(),
  displayName: z.string(),
  issuer: z.string(),
  clientId: z.string(),
  scopes: z.array(z.string()),
  emailDomains: z.array(z.string()),
  enforce: z.boolean(),
  allowSignUp: z.boolean(),
  /** The `acr` values taken as a second factor at the provider. */
  mfaAcrValues: z.array(z.string()),
  disabled: z.boolean(),
  /**
   * Register this at the provider: `{PUBLIC_URL}/login/sso/{id}/callback`; for an organization's
   * SAML connection, its ACS URL (`{PUBLIC_URL}/saml/{slug}/acs`).
   */
  redirectUri: z.string(),
  /** `openid`, or `saml` for an organization's SAML connection (issue #47; its own API: `/api/orgs/{slug}/saml`). */
  protocol: z.enum(['openid', 'saml']),
  /** Prospect accounts linked to it. */
  linkedAccounts: z.int(),
  createdAt: z.iso.datetime({ offset: true }),
  /**
   * The organization that registered it (issue #44), whose admins alone change it (at
   * `/orgs/{slug}/identity-providers`); null for the instance's own providers.
   */
  organization: z.nullable(z.object({ slug: z.string(), name: z.string() })),
});
export type AdminIdentityProvider = z.infer<typeof AdminIdentityProviderSchema>;

/**
 * POST /api/orgs/{slug}/identity-providers/{id}/test ("Test connection", issue #44): the provider's
 * discovery document read now, and what it names; or, when it could not be read, `ok: false` and
 * the one sentence saying why.
 */
export const IdentityProviderConnectionTestSchema = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    issuer: z.string(),
    authorizationEndpoint: z.string(),
    tokenEndpoint: z.string(),
    jwksUri: z.string(),
    userinfoEndpoint: z.nullable(z.string()),
    scopesSupported: z.array(z.string()),
  }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);
export type IdentityProviderConnectionTest = z.infer<typeof IdentityProviderConnectionTestSchema>;
