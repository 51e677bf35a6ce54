import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type AuthEventType =
  | 'device.start'
  | 'device.approve'
  | 'device.deny'
  | 'device.redeem'
  | 'device.replay'
  | 'device.cancel'
  | 'token.issue'
  | 'token.revoke'
  | 'token.revoke_family'
  | 'token.refresh'
  | 'token.reuse'
  | 'oauth.client_register'
  | 'oauth.client_update'
  | 'oauth.client_disable'
  | 'oauth.client_enable'
  | 'oauth.client_delete'
  | 'password.reset_request'
  | 'password.reset'
  | 'password.change'
  | 'account.rename'
  | 'account.delete'
  | 'factor.totp_add'
  | 'factor.totp_remove'
  | 'factor.recovery_codes_new'
  | 'factor.recovery_code_used'
  | 'factor.passkey_add'
  | 'factor.passkey_remove'
  | 'web.sudo'
  | 'account.email_change'
  | 'account.ownership_proven'
  | 'admin.clear_sign_in_block'
  | 'admin.user_disable'
  | 'admin.user_enable'
  | 'admin.user_role'
  | 'admin.user_reset_link'
  | 'admin.user_invite'
  | 'admin.api_action'
  | 'oauth.consent'
  | 'oauth.consent_revoke'
  | 'oauth.code_exchange'
  | 'oauth.code_replay'
  | 'account.invitation_accept'
  | 'email.verify_sent'
  | 'email.verify'
  | 'token.verify_failed'
  | 'web.signup'
  | 'web.login'
  | 'web.login_failed'
  | 'web.logout'
  | 'web.logout_everywhere'
  | 'web.code_failed'
  | 'federation.login'
  | 'federation.login_refused'
  | 'federation.signup'
  | 'federation.link'
  | 'federation.unlink'
  | 'federation.refused_by_provider'
  | 'admin.identity_provider_create'
  | 'admin.identity_provider_update'
  | 'admin.identity_provider_disable'
  | 'admin.identity_provider_enable'
  | 'admin.identity_provider_delete'
  // Organizations (issue #44): each recorded with its organization, for the organization's own log.
  | 'org.create'
  | 'org.rename'
  | 'org.delete'
  | 'org.member_add'
  | 'org.member_role'
  | 'org.member_remove'
  | 'org.member_leave'
  | 'org.invitation_create'
  | 'org.invitation_revoke'
  | 'org.invitation_accept'
  | 'org.domain_add'
  | 'org.domain_verify'
  | 'org.domain_update'
  | 'org.domain_remove'
  | 'org.join_request'
  | 'org.join_request_approve'
  | 'org.join_request_decline'
  | 'org.identity_provider_create'
  | 'org.identity_provider_update'
  | 'org.identity_provider_delete'
  | 'org.service_account_create'
  | 'org.service_account_update'
  | 'org.service_account_delete'
  | 'org.service_account_secret_create'
  | 'org.service_account_secret_delete'
  | 'org.service_account_key_add'
  | 'org.service_account_key_delete'
  | 'org.service_account_new_address'
  | 'org.service_account_federation_add'
  | 'org.service_account_federation_delete'
  | 'org.service_account_token_exchange'
  | 'org.service_account_exchange_refused'
  | 'org.webhook_create'
  | 'org.webhook_update'
  | 'org.webhook_secret_rotate'
  | 'org.webhook_delete'
  | 'org.webhook_disable_failing'
  // SCIM provisioning (issue #47): each with its organization; by nobody when the directory did it.
  | 'scim.token_create'
  | 'scim.token_revoke'
  | 'scim.settings_update'
  | 'scim.user_provision'
  | 'scim.user_update'
  | 'scim.user_deactivate'
  | 'scim.user_reactivate'
  | 'scim.user_delete'
  | 'scim.group_create'
  | 'scim.group_update'
  | 'scim.group_delete';

/** The audit trail of sign-in: who did what from where. Never holds a secret. */
@Entity({ name: 'auth_events' })
export class AuthEvent {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  @Column({ type: 'text' })
  type!: AuthEventType;

  @Column({ name: 'user_id', type: 'uuid', nullable: true })
  userId!: string | null;

  @Column({ type: 'text', nullable: true })
  ip!: string | null;

  /** The organization it belongs to, for that organization's log (issue #44); no foreign key: the log outlives it. */
  @Column({ name: 'organization_id', type: 'uuid', nullable: true })
  organizationId!: string | null;

  /** The caller's User-Agent, clipped, where the request was at hand (issue #46; docs/events.md says where it is not). */
  @Column({ name: 'user_agent', type: 'text', nullable: true })
  userAgent!: string | null;

  /**
   * Also `writer_xid xid8` (the writing transaction's id, filled by its default): the event
   * stream's order (events/, docs/events.md). Not mapped here: TypeORM knows no xid8, and no code
   * writes it.
   */

  /** Ids and reasons only (token id, device login id, why it failed). */
  @Column({ type: 'jsonb', default: {} })
  detail!: Record<string, string | number | boolean | null>;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
