// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { EVENT_TYPES } from './events.js';

/**
 * Signed webhooks of an organization (issue #46 item 3, docs/webhooks.md): an endpoint receives
 * each of the organization's events, the event object itself as the body, signed the Standard
 * Webhooks way (`webhook-id`, `webhook-timestamp`, `webhook-signature`).
 */

const isoTimestamp = z.iso.datetime({ offset: true });

/** The most endpoints one organization may register. */
export const WEBHOOKS_PER_ORGANIZATION_MAX = 20;
/** The most event types one endpoint may name. */
export const WEBHOOK_TYPES_MAX = 100;
/** The longest endpoint URL. */
export const WEBHOOK_URL_MAX = 2000;
/** Delivery log entries shown per page. */
export const WEBHOOK_DELIVERIES_PAGE = 50;

/** An endpoint URL as typed: http(s), no credentials in it; the address rules are checked by the server. */
export const WebhookUrlSchema = z.string().check(
  z.maxLength(WEBHOOK_URL_MAX),
  z.refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'https:' || url.protocol === 'http:') && !url.username && !url.password && !url.hash;
    } catch {
      return false;
    }
  }, 'must be an https:// URL without credentials or fragment'),
);

/** An event type of the catalogue (docs/events.md: `user.signed_in`, `member.added`…). */
const eventType = z.string().check(z.refine((type) => (EVENT_TYPES as readonly string[]).includes(type), 'must be an event type of docs/events.md, such as user.signed_in'));
/** Empty: every type. */
const types = z.array(eventType).check(z.maxLength(WEBHOOK_TYPES_MAX));

/** POST /api/orgs/{slug}/webhooks. `types` empty or absent: every event of the organization. */
export const CreateWebhookRequestSchema = z.strictObject({ url: WebhookUrlSchema, types: z.optional(types) });
export type CreateWebhookRequest = z.infer<typeof CreateWebhookRequestSchema>;

/** PATCH /api/orgs/{slug}/webhooks/{id}: any of a new URL, new types, disabled or not. */
export const UpdateWebhookRequestSchema = z
  .strictObject({ url: z.optional(WebhookUrlSchema), types: z.optional(types), disabled: z.optional(z.boolean()) })
  .check(z.refine((body) => Object.keys(body).length > 0, 'must change something: url, types or disabled'));
export type UpdateWebhookRequest = z.infer<typeof UpdateWebhookRequestSchema>;

/** One endpoint as its admins see it (never its secret). */
export const WebhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  /** Empty: every type. */
  types: z.array(z.string()),
  disabled: z.boolean(),
  /** Why it was disabled: by an admin, or after failing for 3 days. */
  disabledReason: z.nullable(z.string()),
  /** Until when the secret before the last rotation still signs too, or null. */
  previousSecretValidUntil: z.nullable(isoTimestamp),
  createdAt: isoTimestamp,
});
export type Webhook = z.infer<typeof WebhookSchema>;

/** 201 of POST …/webhooks and 200 of POST …/rotate-secret: the secret, shown this once. */
export const WebhookSecretResponseSchema = z.object({
  id: z.string(),
  /** `whsec_` and the base64 of 32 random bytes, as Standard Webhooks libraries take it. */
  secret: z.string(),
  webhook: WebhookSchema,
});
export type WebhookSecretResponse = z.infer<typeof WebhookSecretResponseSchema>;

export const WEBHOOK_DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;

/** One entry of an endpoint's delivery log. */
export const WebhookDeliverySchema = z.object({
  id: z.string(),
  /** The event's id: the `webhook-id` header, the same on every try and redelivery. */
  eventId: z.string(),
  eventType: z.nullable(z.string()),
  /** pending (not yet delivered, retried), delivered, failed (given up after 3 days). */
  state: z.enum(WEBHOOK_DELIVERY_STATES),
  attempts: z.int(),
  /** The last answer's HTTP status, or null (no answer). */
  lastStatus: z.nullable(z.int()),
  lastError: z.nullable(z.string()),
  nextAttemptAt: z.nullable(isoTimestamp),
  deliveredAt: z.nullable(isoTimestamp),
  createdAt: isoTimestamp,
  /** The delivery this one sends again (Redeliver), or null. */
  redeliveryOf: z.nullable(z.string()),
});
export type WebhookDelivery = z.infer<typeof WebhookDeliverySchema>;
