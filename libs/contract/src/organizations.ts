// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { EmailDomainSchema } from './identity-providers.js';
import { hasUnsafeText, looksLikeEmail, UNSAFE_TEXT_MESSAGE } from './text.js';

/**
 * Organizations (issue #44): a team with its own members and roles, invitations, verified domains
 * and identity providers, under `/api/orgs` (a bearer token with the `orgs` scope, or a signed-in
 * browser with its CSRF token) and the `/orgs` pages.
 */

/**
 * One role per member, each allowed everything of the roles below it:
 * `member` sees the organization and its members; `admin` manages members, invitations, domains,
 * identity providers (never an owner's role); `owner` also names owners and deletes the organization.
 */
export const ORG_ROLES = ['member', 'admin', 'owner'] as const;
export type OrgRole = (typeof ORG_ROLES)[number];

/** Whether `role` may do what `needed` may (the roles are ranked: member < admin < owner). */
export const roleAtLeast = (role: OrgRole, needed: OrgRole): boolean => ORG_ROLES.indexOf(role) >= ORG_ROLES.indexOf(needed);

/**
 * The organization a CLI command acts for (`prospect org:switch`, `--org`), sent as this header's
 * slug; a route that acts for one organization may take it from there.
 */
export const ORGANIZATION_HEADER = 'Prospect-Organization';

/** Words of `/api/orgs/…` that are routes, never an organization's slug (`GET /api/orgs/joinable`). */
export const RESERVED_ORG_SLUGS: readonly string[] = ['joinable'];

/** A slug: the organization's name in URLs, 2 to 40 lower-case letters, digits or "-", not starting or ending with "-". */
export const OrgSlugSchema = z.string().check(
  z.regex(/^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])$/, 'must be 2 to 40 lower-case letters, digits or "-", not starting or ending with "-"'),
  z.refine((slug) => !RESERVED_ORG_SLUGS.includes(slug), 'is a word the API uses for something else: choose another'),
);

const orgName = z.string().check(z.trim(), z.minLength(1), z.maxLength(80), z.refine((text) => !hasUnsafeText(text), UNSAFE_TEXT_MESSAGE));
const isoTimestamp = z.iso.datetime({ offset: true });

/** POST /api/orgs. */
export const CreateOrganizationRequestSchema = z.strictObject({ name: orgName, slug: OrgSlugSchema });
export type CreateOrganizationRequest = z.infer<typeof CreateOrganizationRequestSchema>;

/** PATCH /api/orgs/{slug}. */
export const UpdateOrganizationRequestSchema = z.strictObject({ name: orgName });
export type UpdateOrganizationRequest = z.infer<typeof UpdateOrganizationRequestSchema>;

/** An organization as one of its members sees it, with their role. */
export const OrganizationSchema = z.object({
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  role: z.enum(ORG_ROLES),
});
export type Organization = z.infer<typeof OrganizationSchema>;

/** GET /api/orgs/{slug}/members: one member. `user.id` is the id `/api/cli/auth/me` answers. */
export const OrganizationMemberSchema = z.object({
  user: z.object({ id: z.string(), email: z.string(), name: z.string() }),
  role: z.enum(ORG_ROLES),
  joinedAt: isoTimestamp,
});
export type OrganizationMember = z.infer<typeof OrganizationMemberSchema>;

/** PATCH /api/orgs/{slug}/members/{userId}. */
export const UpdateMemberRequestSchema = z.strictObject({ role: z.enum(ORG_ROLES) });
export type UpdateMemberRequest = z.infer<typeof UpdateMemberRequestSchema>;

/** How long an invitation's link can be accepted. */
export const ORG_INVITATION_DAYS = 7;

/** POST /api/orgs/{slug}/invitations. */
export const CreateInvitationRequestSchema = z.strictObject({
  email: z.string().check(z.trim(), z.toLowerCase(), z.maxLength(320), z.refine(looksLikeEmail, 'must be an e-mail address (name@example.com, nothing around it)')),
  role: z.enum(ORG_ROLES),
});
export type CreateInvitationRequest = z.infer<typeof CreateInvitationRequestSchema>;

/** An invitation not yet accepted, revoked or expired. */
export const OrganizationInvitationSchema = z.object({
  id: z.string(),
  email: z.string(),
  role: z.enum(ORG_ROLES),
  expiresAt: isoTimestamp,
});
export type OrganizationInvitation = z.infer<typeof OrganizationInvitationSchema>;

/** Who may join through a verified domain: by invitation only, by a request an admin approves, or at once. */
export const JOIN_POLICIES = ['invite', 'request', 'auto'] as const;
export type JoinPolicy = (typeof JOIN_POLICIES)[number];

/** The TXT record's value prefix that proves an organization controls a domain. */
export const DOMAIN_VERIFICATION_PREFIX = 'prospect-verification=';

/** POST /api/orgs/{slug}/domains. */
export const AddDomainRequestSchema = z.strictObject({ domain: EmailDomainSchema });
export type AddDomainRequest = z.infer<typeof AddDomainRequestSchema>;

/** PATCH /api/orgs/{slug}/domains/{domain}. */
export const UpdateDomainRequestSchema = z
  .strictObject({ joinPolicy: z.optional(z.enum(JOIN_POLICIES)), enforceSso: z.optional(z.boolean()) })
  .check(z.refine((body) => Object.keys(body).length > 0, 'must change something'));
export type UpdateDomainRequest = z.infer<typeof UpdateDomainRequestSchema>;

/** A domain of an organization: the TXT record to publish on it, and whether it was found. */
export const OrganizationDomainSchema = z.object({
  domain: z.string(),
  /** Publish as a TXT record on the domain itself: `prospect-verification=<token>`. */
  verificationRecord: z.string(),
  verified: z.boolean(),
  verifiedAt: z.nullable(isoTimestamp),
  joinPolicy: z.enum(JOIN_POLICIES),
  enforceSso: z.boolean(),
});
export type OrganizationDomain = z.infer<typeof OrganizationDomainSchema>;

/**
 * GET /api/orgs/joinable: an organization the caller may join (`auto`) or ask to join (`request`)
 * through a verified domain of theirs, not being a member yet; `requested` once they asked.
 */
export const JoinableOrganizationSchema = z.object({
  slug: z.string(),
  name: z.string(),
  domain: z.string(),
  joinPolicy: z.enum(['request', 'auto']),
  requested: z.boolean(),
});
export type JoinableOrganization = z.infer<typeof JoinableOrganizationSchema>;

/** POST /api/orgs/{slug}/join: a member now (with their role), or a request waiting for an admin. */
export const JoinOrganizationResponseSchema = z.object({
  status: z.enum(['member', 'requested']),
  slug: z.string(),
  name: z.string(),
  role: z.nullable(z.enum(ORG_ROLES)),
});
export type JoinOrganizationResponse = z.infer<typeof JoinOrganizationResponseSchema>;

/** GET /api/orgs/{slug}/join-requests: a person who asked to join through a verified domain. */
export const JoinRequestSchema = z.object({
  user: z.object({ id: z.string(), email: z.string(), name: z.string() }),
  requestedAt: isoTimestamp,
});
export type JoinRequest = z.infer<typeof JoinRequestSchema>;
