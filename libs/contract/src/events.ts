// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';

/**
 * Events (issue #46, docs/events.md): every entry of the security log as one public event, read
 * through a cursor-paged stream (`GET /api/orgs/{slug}/events`, `GET /api/admin/events`) and, later,
 * delivered to webhooks with exactly this object as the body.
 */

const str = z.optional(z.nullable(z.string()));
const num = z.optional(z.nullable(z.number()));
const bool = z.optional(z.nullable(z.boolean()));

/**
 * Each event type's `data`: the ids and reasons recorded with it, never a secret. Every field is
 * optional (older events may lack one added later) and unknown fields are kept, so a new field is
 * not a breaking change; a field listed here keeps its name and type.
 */
const data = (shape: Record<string, z.ZodMiniType>) => z.looseObject(shape);

const signIn = { method: z.optional(z.enum(['password', 'passkey', 'identity_provider'])), browser: str, secondFactor: str, providerId: str, label: str, linkId: str, reason: str };
const token = { tokenId: str, deviceLoginId: str, grantId: str, clientId: str, scope: str, label: str, origin: str, revokedTokens: num };
const grant = { deviceLoginId: str, grantId: str, clientId: str, clientName: str, scope: str, revokedTokens: num, tokens: num };
const client = { clientId: str, cancelled: num, revoked: num, secret: str };
const serviceAccount = {
  serviceAccountId: str,
  name: str,
  clientId: str,
  secretId: str,
  keyId: str,
  kid: str,
  expiresAt: str,
  reason: str,
  // Workload identity federation: the trusted issuer, and an exchange's external subject and the condition met or failed.
  federationId: str,
  issuer: str,
  audience: str,
  conditions: str,
  sub: str,
  condition: str,
};
const member = { memberId: str, role: str, from: str, to: str, via: str, left: bool };
const invitation = { invitationId: str, email: str, role: str, replaced: num, added: bool };
const domain = { domain: str, joinPolicy: str, enforceSso: bool, wasVerified: bool };
const provider = { providerId: str, label: str, sessions: num, disabled: bool, reason: str };
const account = { accountId: str, role: str, cleared: bool };
/** `origin`: the URL's scheme, host and port only (its path or query may hold a receiver's token); `changed`: the fields an update set (`url,types,disabled`); `types`: comma-separated, `*` for every type. */
const webhook = { webhookId: str, origin: str, changed: str, types: str, disabled: bool, previousSecretValidUntil: str, reason: str };
const scim = { scimUserId: str, memberId: str, userName: str, externalId: str, groupId: str, displayName: str, tokenId: str, label: str, role: str, linked: bool, accountDisabled: bool, accountEnabled: bool, added: num, removed: num, reason: str };

/** Every public event type and the shape of its `data`, in the order docs/events.md lists them. */
export const EVENT_DATA_SCHEMAS = {
  'user.signed_up': data({ method: str, providerId: str, label: str }),
  'user.signed_in': data(signIn),
  'user.sign_in_failed': data(signIn),
  'user.second_factor_failed': data({}),
  'user.reauthenticated': data({ with: str, providerId: str, label: str }),
  'user.signed_out': data({}),
  'user.signed_out_everywhere': data({ sessions: num, tokens: num }),
  'user.renamed': data({ name: str }),
  'user.email_changed': data({}),
  'user.email_verification_sent': data({}),
  'user.email_verified': data({}),
  'user.email_ownership_proven': data({}),
  'user.invited': data(account),
  'user.invitation_accepted': data({}),
  'user.disabled': data(account),
  'user.enabled': data(account),
  'user.role_changed': data(account),
  'user.sign_in_block_cleared': data(account),
  'user.deleted': data({}),
  'password.reset_requested': data({}),
  'password.reset_link_created': data(account),
  'password.reset': data({}),
  'password.changed': data({}),
  'factor.totp_added': data({ accountId: str }),
  'factor.totp_removed': data({ accountId: str }),
  'factor.recovery_codes_created': data({}),
  'factor.recovery_code_used': data({}),
  'factor.passkey_added': data({ label: str }),
  'factor.passkey_removed': data({ label: str }),
  'federated_identity.linked': data({ providerId: str, label: str, linkId: str, proof: str }),
  'federated_identity.unlinked': data({ providerId: str, label: str, linkId: str }),
  'federated_identity.refused_by_provider': data({ providerId: str, label: str, reason: str }),
  'device_authorization.started': data({ deviceLoginId: str, clientId: str, clientName: str }),
  'device_authorization.cancelled': data({ deviceLoginId: str }),
  'grant.approved': data(grant),
  'grant.denied': data(grant),
  'grant.redeemed': data(grant),
  'grant.replay_detected': data(grant),
  'grant.revoked': data(grant),
  'token.created': data(token),
  'token.refreshed': data(token),
  'token.revoked': data(token),
  'token.reuse_detected': data(token),
  'token.verification_failed': data({ reason: str, count: num }),
  'consent.granted': data({ clientId: str, scope: str }),
  'consent.revoked': data({ clientId: str, scope: str }),
  'authorization_code.exchanged': data({ clientId: str, grantId: str, scope: str }),
  'authorization_code.replay_detected': data({ clientId: str, grantId: str, revokedTokens: num }),
  'client.created': data(client),
  'client.updated': data(client),
  'client.disabled': data(client),
  'client.enabled': data(client),
  'client.deleted': data(client),
  'identity_provider.created': data(provider),
  'identity_provider.updated': data(provider),
  'identity_provider.disabled': data(provider),
  'identity_provider.enabled': data(provider),
  'identity_provider.deleted': data(provider),
  'admin.action': data({ action: str }),
  'organization.created': data({ slug: str }),
  'organization.renamed': data({ name: str }),
  'organization.deleted': data({ slug: str, reason: str }),
  'member.added': data(member),
  'member.role_changed': data(member),
  'member.removed': data(member),
  'invitation.created': data(invitation),
  'invitation.revoked': data(invitation),
  'invitation.accepted': data(invitation),
  'domain.added': data(domain),
  'domain.verified': data(domain),
  'domain.updated': data(domain),
  'domain.removed': data(domain),
  'join_request.created': data({ domain: str }),
  'join_request.approved': data({ memberId: str, domain: str }),
  'join_request.declined': data({ memberId: str, reason: str }),
  'service_account.created': data(serviceAccount),
  'service_account.updated': data(serviceAccount),
  'service_account.deleted': data(serviceAccount),
  'service_account.secret_created': data(serviceAccount),
  'service_account.secret_deleted': data(serviceAccount),
  'service_account.key_added': data(serviceAccount),
  'service_account.key_deleted': data(serviceAccount),
  'service_account.used_from_new_address': data(serviceAccount),
  'service_account.federation_added': data(serviceAccount),
  'service_account.federation_deleted': data(serviceAccount),
  'service_account.token_exchanged': data(serviceAccount),
  'service_account.exchange_refused': data(serviceAccount),
  'webhook.created': data(webhook),
  'webhook.updated': data(webhook),
  'webhook.secret_rotated': data(webhook),
  'webhook.deleted': data(webhook),
  'webhook.disabled': data(webhook),
  'scim.token_created': data(scim),
  'scim.token_revoked': data(scim),
  'scim.settings_updated': data({ deactivateDisablesAccount: bool, groupRoles: str }),
  'scim.user_provisioned': data(scim),
  'scim.user_updated': data(scim),
  'scim.user_deactivated': data(scim),
  'scim.user_reactivated': data(scim),
  'scim.user_deleted': data(scim),
  'scim.group_created': data(scim),
  'scim.group_updated': data(scim),
  'scim.group_deleted': data(scim),
} as const;

export type EventType = keyof typeof EVENT_DATA_SCHEMAS;
export const EVENT_TYPES = Object.keys(EVENT_DATA_SCHEMAS) as EventType[];

/** An event id and the stream's cursor: `evt_` and 26 base32 digits, sortable as text in stream order. */
export const EVENT_ID_PATTERN = /^evt_[0-9a-hjkmnp-tv-z]{26}$/;
export const EventIdSchema = z.string().check(z.regex(EVENT_ID_PATTERN, 'must be an event id (evt_ and 26 base32 digits) from an earlier answer'));

/** Who did it: a person, or the instance itself (or someone not signed in, such as a failed sign-in's caller). */
export const EventActorSchema = z.union([
  z.object({ type: z.literal('user'), id: z.string(), email: z.nullable(z.string()) }),
  z.object({ type: z.literal('system'), id: z.null() }),
]);
export type EventActor = z.infer<typeof EventActorSchema>;

/** What it was done to, where that is not the actor (a member, a token, a client…). */
export const EVENT_SUBJECT_TYPES = ['user', 'token', 'grant', 'client', 'device_authorization', 'organization', 'invitation', 'domain', 'identity_provider', 'federated_identity', 'service_account', 'webhook'] as const;
export const EventSubjectSchema = z.object({ type: z.enum(EVENT_SUBJECT_TYPES), id: z.string() });
export type EventSubject = z.infer<typeof EventSubjectSchema>;

/** The organization it belongs to; `slug` and `name` are null once the organization is deleted. */
export const EventOrganizationSchema = z.object({ id: z.string(), slug: z.nullable(z.string()), name: z.nullable(z.string()) });

const eventFields = {
  id: EventIdSchema,
  occurredAt: z.iso.datetime({ offset: true }),
  actor: EventActorSchema,
  subject: z.nullable(EventSubjectSchema),
  organization: z.nullable(EventOrganizationSchema),
  /** The caller's address, where there was a request (null after its person's account was deleted). */
  ip: z.nullable(z.string()),
  /** The caller's User-Agent, where it was recorded (docs/events.md lists where not). */
  userAgent: z.nullable(z.string()),
};

/** One event, as the stream shows it and a webhook delivers it: one object per type, by `type`. */
export const EventSchema = z.discriminatedUnion(
  'type',
  EVENT_TYPES.map((type) => z.object({ ...eventFields, type: z.literal(type), data: EVENT_DATA_SCHEMAS[type] })) as unknown as [
    z.ZodMiniObject<typeof eventFields & { type: z.ZodMiniLiteral<EventType>; data: z.ZodMiniType }>,
  ],
);
export type Event = Omit<z.infer<typeof EventSchema>, 'type' | 'data'> & { type: EventType; data: Record<string, unknown> };

/** The stream's page size: default and most. */
export const EVENTS_PAGE_DEFAULT = 100;
export const EVENTS_PAGE_MAX = 1000;

/** GET …/events: `next` is the cursor to send as `after` next time (the same one when no event came). */
export const EventPageSchema = z.object({ events: z.array(EventSchema), next: EventIdSchema });
export type EventPage = { events: Event[]; next: string };
