import type { EventSubject, EventType } from '@prospect/contract';
import type { AuthEventType } from '../audit/auth-event.entity.js';

/** How one internal audit type reads as a public event (docs/events.md lists the same). */
export interface CatalogueEntry {
  type: EventType;
  /**
   * Who the row's `user_id` is: the actor (default), or the subject when someone else, perhaps
   * nobody signed in, acted on that account (a failed sign-in names the account tried).
   */
  user?: 'actor' | 'subject';
  /** The subject, from a field of the recorded detail: [its type, the detail's field holding its id]. */
  subject?: readonly [EventSubject['type'], string];
  /** Fields `data` always has for this internal type (two internal types share a public one). */
  data?: Record<string, string | boolean>;
}

/**
 * Every internal type (audit/auth-event.entity.ts) and the public event it is. Keyed by the full
 * AuthEventType union: a type added there does not compile until it has its line here, so the log
 * and the stream cannot drift apart. Several internal types may share one public type (a sign-in
 * with a password or through an identity provider is `user.signed_in`, with `data.method`).
 */
export const EVENT_CATALOGUE: { readonly [T in AuthEventType]: CatalogueEntry } = {
  'web.signup': { type: 'user.signed_up', data: { method: 'password' } },
  'federation.signup': { type: 'user.signed_up', data: { method: 'identity_provider' } },
  'web.login': { type: 'user.signed_in', data: { method: 'password' } },
  'federation.login': { type: 'user.signed_in', data: { method: 'identity_provider' } },
  'web.login_failed': { type: 'user.sign_in_failed', user: 'subject', data: { method: 'password' } },
  'federation.login_refused': { type: 'user.sign_in_failed', user: 'subject', data: { method: 'identity_provider' } },
  'web.code_failed': { type: 'user.second_factor_failed', user: 'subject' },
  'web.sudo': { type: 'user.reauthenticated' },
  'web.logout': { type: 'user.signed_out' },
  'web.logout_everywhere': { type: 'user.signed_out_everywhere' },
  'account.rename': { type: 'user.renamed' },
  'account.email_change': { type: 'user.email_changed' },
  'email.verify_sent': { type: 'user.email_verification_sent' },
  'email.verify': { type: 'user.email_verified' },
  'account.ownership_proven': { type: 'user.email_ownership_proven' },
  'admin.user_invite': { type: 'user.invited', subject: ['user', 'accountId'] },
  'account.invitation_accept': { type: 'user.invitation_accepted' },
  'admin.user_disable': { type: 'user.disabled', subject: ['user', 'accountId'] },
  'admin.user_enable': { type: 'user.enabled', subject: ['user', 'accountId'] },
  'admin.user_role': { type: 'user.role_changed', subject: ['user', 'accountId'] },
  'admin.clear_sign_in_block': { type: 'user.sign_in_block_cleared', subject: ['user', 'accountId'] },
  'account.delete': { type: 'user.deleted' },
  'password.reset_request': { type: 'password.reset_requested', user: 'subject' },
  'admin.user_reset_link': { type: 'password.reset_link_created', subject: ['user', 'accountId'] },
  'password.reset': { type: 'password.reset' },
  'password.change': { type: 'password.changed' },
  'factor.totp_add': { type: 'factor.totp_added' },
  'factor.totp_remove': { type: 'factor.totp_removed', subject: ['user', 'accountId'] },
  'factor.recovery_codes_new': { type: 'factor.recovery_codes_created' },
  'factor.recovery_code_used': { type: 'factor.recovery_code_used' },
  'factor.passkey_add': { type: 'factor.passkey_added' },
  'factor.passkey_remove': { type: 'factor.passkey_removed' },
  'federation.link': { type: 'federated_identity.linked', subject: ['federated_identity', 'linkId'] },
  'federation.unlink': { type: 'federated_identity.unlinked', subject: ['federated_identity', 'linkId'] },
  'federation.refused_by_provider': { type: 'federated_identity.refused_by_provider', subject: ['identity_provider', 'providerId'] },
  'device.start': { type: 'device_authorization.started', subject: ['device_authorization', 'deviceLoginId'] },
  'device.cancel': { type: 'device_authorization.cancelled', subject: ['device_authorization', 'deviceLoginId'] },
  'device.approve': { type: 'grant.approved', subject: ['grant', 'deviceLoginId'] },
  'device.deny': { type: 'grant.denied', subject: ['grant', 'deviceLoginId'] },
  'device.redeem': { type: 'grant.redeemed', subject: ['grant', 'deviceLoginId'] },
  'device.replay': { type: 'grant.replay_detected', subject: ['grant', 'deviceLoginId'] },
  'token.revoke_family': { type: 'grant.revoked', subject: ['grant', 'deviceLoginId'] },
  'token.issue': { type: 'token.created', subject: ['token', 'tokenId'] },
  'token.refresh': { type: 'token.refreshed', subject: ['token', 'tokenId'] },
  'token.revoke': { type: 'token.revoked', subject: ['token', 'tokenId'] },
  'token.reuse': { type: 'token.reuse_detected', subject: ['grant', 'deviceLoginId'] },
  'token.verify_failed': { type: 'token.verification_failed' },
  'oauth.consent': { type: 'consent.granted', subject: ['client', 'clientId'] },
  'oauth.consent_revoke': { type: 'consent.revoked', subject: ['client', 'clientId'] },
  'oauth.code_exchange': { type: 'authorization_code.exchanged', subject: ['grant', 'grantId'] },
  'oauth.code_replay': { type: 'authorization_code.replay_detected', subject: ['grant', 'grantId'] },
  'oauth.client_register': { type: 'client.created', subject: ['client', 'clientId'] },
  'oauth.client_update': { type: 'client.updated', subject: ['client', 'clientId'] },
  'oauth.client_disable': { type: 'client.disabled', subject: ['client', 'clientId'] },
  'oauth.client_enable': { type: 'client.enabled', subject: ['client', 'clientId'] },
  'oauth.client_delete': { type: 'client.deleted', subject: ['client', 'clientId'] },
  'admin.identity_provider_create': { type: 'identity_provider.created', subject: ['identity_provider', 'providerId'] },
  'admin.identity_provider_update': { type: 'identity_provider.updated', subject: ['identity_provider', 'providerId'] },
  'admin.identity_provider_disable': { type: 'identity_provider.disabled', subject: ['identity_provider', 'providerId'] },
  'admin.identity_provider_enable': { type: 'identity_provider.enabled', subject: ['identity_provider', 'providerId'] },
  'admin.identity_provider_delete': { type: 'identity_provider.deleted', subject: ['identity_provider', 'providerId'] },
  'org.identity_provider_create': { type: 'identity_provider.created', subject: ['identity_provider', 'providerId'] },
  'org.identity_provider_update': { type: 'identity_provider.updated', subject: ['identity_provider', 'providerId'] },
  'org.identity_provider_delete': { type: 'identity_provider.deleted', subject: ['identity_provider', 'providerId'] },
  'admin.api_action': { type: 'admin.action' },
  'org.create': { type: 'organization.created' },
  'org.rename': { type: 'organization.renamed' },
  'org.delete': { type: 'organization.deleted' },
  'org.member_add': { type: 'member.added', subject: ['user', 'memberId'] },
  'org.member_role': { type: 'member.role_changed', subject: ['user', 'memberId'] },
  'org.member_remove': { type: 'member.removed', subject: ['user', 'memberId'] },
  'org.member_leave': { type: 'member.removed', subject: ['user', 'memberId'], data: { left: true } },
  'org.invitation_create': { type: 'invitation.created', subject: ['invitation', 'invitationId'] },
  'org.invitation_revoke': { type: 'invitation.revoked', subject: ['invitation', 'invitationId'] },
  'org.invitation_accept': { type: 'invitation.accepted', subject: ['invitation', 'invitationId'] },
  // A domain is known by its name within its organization.
  'org.domain_add': { type: 'domain.added', subject: ['domain', 'domain'] },
  'org.domain_verify': { type: 'domain.verified', subject: ['domain', 'domain'] },
  'org.domain_update': { type: 'domain.updated', subject: ['domain', 'domain'] },
  'org.domain_remove': { type: 'domain.removed', subject: ['domain', 'domain'] },
  'org.join_request': { type: 'join_request.created' },
  'org.join_request_approve': { type: 'join_request.approved', subject: ['user', 'memberId'] },
  'org.join_request_decline': { type: 'join_request.declined', subject: ['user', 'memberId'] },
  'org.service_account_create': { type: 'service_account.created', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_update': { type: 'service_account.updated', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_delete': { type: 'service_account.deleted', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_secret_create': { type: 'service_account.secret_created', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_secret_delete': { type: 'service_account.secret_deleted', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_key_add': { type: 'service_account.key_added', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_key_delete': { type: 'service_account.key_deleted', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_new_address': { type: 'service_account.used_from_new_address', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_federation_add': { type: 'service_account.federation_added', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_federation_delete': { type: 'service_account.federation_deleted', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_token_exchange': { type: 'service_account.token_exchanged', subject: ['service_account', 'serviceAccountId'] },
  'org.service_account_exchange_refused': { type: 'service_account.exchange_refused', subject: ['service_account', 'serviceAccountId'] },
  'org.webhook_create': { type: 'webhook.created', subject: ['webhook', 'webhookId'] },
  'org.webhook_update': { type: 'webhook.updated', subject: ['webhook', 'webhookId'] },
  'org.webhook_secret_rotate': { type: 'webhook.secret_rotated', subject: ['webhook', 'webhookId'] },
  'org.webhook_delete': { type: 'webhook.deleted', subject: ['webhook', 'webhookId'] },
  'org.webhook_disable_failing': { type: 'webhook.disabled', subject: ['webhook', 'webhookId'] },
  'scim.token_create': { type: 'scim.token_created' },
  'scim.token_revoke': { type: 'scim.token_revoked' },
  'scim.settings_update': { type: 'scim.settings_updated' },
  'scim.user_provision': { type: 'scim.user_provisioned', subject: ['user', 'memberId'] },
  'scim.user_update': { type: 'scim.user_updated', subject: ['user', 'memberId'] },
  'scim.user_deactivate': { type: 'scim.user_deactivated', subject: ['user', 'memberId'] },
  'scim.user_reactivate': { type: 'scim.user_reactivated', subject: ['user', 'memberId'] },
  'scim.user_delete': { type: 'scim.user_deleted', subject: ['user', 'memberId'] },
  'scim.group_create': { type: 'scim.group_created' },
  'scim.group_update': { type: 'scim.group_updated' },
  'scim.group_delete': { type: 'scim.group_deleted' },
};

/** The internal types behind each public one (the stream's `types` filter runs on the stored column). */
export const INTERNAL_TYPES_OF: ReadonlyMap<EventType, readonly AuthEventType[]> = (() => {
  const map = new Map<EventType, AuthEventType[]>();
  for (const [internal, entry] of Object.entries(EVENT_CATALOGUE) as Array<[AuthEventType, CatalogueEntry]>) {
    map.set(entry.type, [...(map.get(entry.type) ?? []), internal]);
  }
  return map;
})();
