// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { hasUnsafeText, UNSAFE_TEXT_MESSAGE } from './text.js';

/**
 * SCIM 2.0 provisioning per organization (issue #47): the directory (Okta, Entra ID…) calls
 * `/scim/v2/{slug}/` with a bearer token the organization's admins make under
 * `/api/orgs/{slug}/scim-tokens`; they set how its groups map to roles under `/api/orgs/{slug}/scim`.
 */

/** A SCIM token starts with this (secret scanners; told from every other token at a glance). */
export const SCIM_TOKEN_PREFIX = 'prscim_';

/** The most SCIM tokens an organization holds at once (two during a rotation, a few directories). */
export const MAX_SCIM_TOKENS = 5;

/** The roles a directory's group may give: owners are named by owners, by hand. */
export const SCIM_GROUP_ROLES = ['member', 'admin'] as const;
export type ScimGroupRole = (typeof SCIM_GROUP_ROLES)[number];

const label = z.string().check(z.trim(), z.minLength(1), z.maxLength(80), z.refine((text) => !hasUnsafeText(text), UNSAFE_TEXT_MESSAGE));
const groupName = z.string().check(z.trim(), z.minLength(1), z.maxLength(200), z.refine((text) => !hasUnsafeText(text), UNSAFE_TEXT_MESSAGE));
const isoTimestamp = z.iso.datetime({ offset: true });

/** POST /api/orgs/{slug}/scim-tokens. */
export const CreateScimTokenRequestSchema = z.strictObject({ label: z.optional(label) });
export type CreateScimTokenRequest = z.infer<typeof CreateScimTokenRequestSchema>;

/** A SCIM token as listed: never its secret. */
export const ScimTokenSchema = z.object({ id: z.string(), label: z.string(), createdAt: isoTimestamp, createdBy: z.nullable(z.string()), lastUsedAt: z.nullable(isoTimestamp) });
export type ScimToken = z.infer<typeof ScimTokenSchema>;

/** The answer of its creation: the token itself, shown this once. */
export const CreatedScimTokenSchema = z.object({ id: z.string(), label: z.string(), token: z.string(), createdAt: isoTimestamp });
export type CreatedScimToken = z.infer<typeof CreatedScimTokenSchema>;

/** One mapping: members of the directory's group of this displayName get `role`. */
export const ScimGroupRoleSchema = z.object({ group: groupName, role: z.enum(SCIM_GROUP_ROLES) });
export type ScimGroupRoleMapping = z.infer<typeof ScimGroupRoleSchema>;

/** GET /api/orgs/{slug}/scim. */
export const ScimSettingsSchema = z.object({
  endpoint: z.string(),
  deactivateDisablesAccount: z.boolean(),
  groupRoles: z.array(ScimGroupRoleSchema),
});
export type ScimSettings = z.infer<typeof ScimSettingsSchema>;

/** PATCH /api/orgs/{slug}/scim: any of them; `groupRoles` replaces the whole mapping. */
export const UpdateScimSettingsRequestSchema = z
  .strictObject({ deactivateDisablesAccount: z.optional(z.boolean()), groupRoles: z.optional(z.array(ScimGroupRoleSchema).check(z.maxLength(50))) })
  .check(z.refine((body) => Object.keys(body).length > 0, 'must change something: deactivateDisablesAccount or groupRoles'));
export type UpdateScimSettingsRequest = z.infer<typeof UpdateScimSettingsRequestSchema>;

/** One request of the directory, as the provisioning log shows it. */
export const ScimRequestLogEntrySchema = z.object({ at: isoTimestamp, method: z.string(), resource: z.string(), status: z.number(), outcome: z.string() });
export type ScimRequestLogEntry = z.infer<typeof ScimRequestLogEntrySchema>;
