// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';

/**
 * An organization's SAML 2.0 connection (issue #47): `PUT /api/orgs/{slug}/saml` registers the
 * IdP by its metadata XML; `PATCH` sets its policy.
 */
export const PutSamlConnectionRequestSchema = z.strictObject({
  /** The IdP's SAML metadata: its entityID, HTTP-Redirect SingleSignOnService and signing certificate(s). */
  idpMetadataXml: z.string().check(z.minLength(1), z.maxLength(100_000)),
});
export type PutSamlConnectionRequest = z.infer<typeof PutSamlConnectionRequestSchema>;

/** An AuthnContextClassRef, compared exactly. */
const contextClass = z.string().check(z.trim(), z.minLength(1), z.maxLength(200), z.regex(/^[\x21-\x7E]+$/, 'must be printable ASCII without spaces'));

export const UpdateSamlConnectionRequestSchema = z
  .strictObject({
    /** People of the organization's verified domains sign in only through this connection. */
    enforce: z.optional(z.boolean()),
    /** The AuthnContextClassRef values that stand for a second factor at the IdP (exact matches). */
    secondFactorContexts: z.optional(z.array(contextClass).check(z.maxLength(20))),
    /** A first sign-in of an address of a verified domain creates the account and membership. */
    allowSignUp: z.optional(z.boolean()),
    /** Unsolicited (IdP-initiated) responses are accepted, each assertion once. */
    allowIdpInitiated: z.optional(z.boolean()),
    /** Disabling refuses its sign-ins and ends every browser session it started. */
    disabled: z.optional(z.boolean()),
  })
  .check(z.refine((body) => Object.keys(body).length > 0, 'must change something'));
export type UpdateSamlConnectionRequest = z.infer<typeof UpdateSamlConnectionRequestSchema>;

/** What the service provider's side is: what the admin enters at the IdP. */
export const SamlServiceProviderSchema = z.object({
  spEntityId: z.string(),
  acsUrl: z.string(),
  metadataUrl: z.string(),
});
export type SamlServiceProvider = z.infer<typeof SamlServiceProviderSchema>;

export const SamlConnectionSchema = z.object({
  spEntityId: z.string(),
  acsUrl: z.string(),
  metadataUrl: z.string(),
  /** Where a sign-in starts (SP-initiated): `/saml/{slug}/login`. */
  signInUrl: z.string(),
  idpEntityId: z.string(),
  ssoUrl: z.string(),
  certificates: z.array(z.object({ subject: z.string(), notAfter: z.string(), sha256: z.string() })),
  enforce: z.boolean(),
  allowSignUp: z.boolean(),
  allowIdpInitiated: z.boolean(),
  secondFactorContexts: z.array(z.string()),
  disabled: z.boolean(),
  linkedAccounts: z.number(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type SamlConnection = z.infer<typeof SamlConnectionSchema>;
