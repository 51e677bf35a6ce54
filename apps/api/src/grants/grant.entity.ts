import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** How a grant was obtained: a device login approved in a browser, or an authorization code exchanged. */
export type GrantType = 'device_code' | 'authorization_code';

/**
 * The record of one approval (issue #43): a person let a client act for them with these scopes.
 * Refresh tokens and access tokens hang off it (`grant_id`); its row is their family's lock, and
 * revoking it ends them all. A device login keeps its flow's own state and points to its grant
 * (`device_logins.grant_id`) once approved; an authorization code's exchange makes one.
 */
@Entity({ name: 'grants' })
export class Grant {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  /** The person who approved it, whom its tokens act for. */
  @Column({ name: 'user_id', type: 'uuid' })
  userId!: string;

  @Column({ name: 'client_id', type: 'text' })
  clientId!: string;

  @Column({ name: 'grant_type', type: 'text' })
  grantType!: GrantType;

  /** The scopes granted (space-separated, from SCOPES). */
  @Column({ type: 'text', default: '' })
  scope!: string;

  /** When its `admin` ends (ADMIN_GRANT_SECONDS after the approval); null if it has none. */
  @Column({ name: 'admin_until', type: 'timestamptz', nullable: true })
  adminUntil!: Date | null;

  /** The account's credential epoch the approving session was signed in under; null: not known (refused). */
  @Column({ name: 'credential_epoch', type: 'integer', nullable: true })
  credentialEpoch!: number | null;

  /** How the approving sign-in proved its person (RFC 8176), as it was recorded then. */
  @Column({ type: 'text', array: true, nullable: true })
  amr!: string[] | null;

  /** The approving sign-in's `acr`, where it had one (a provider's). */
  @Column({ type: 'text', nullable: true })
  acr!: string | null;

  /** When the approving session signed in. */
  @Column({ name: 'auth_time', type: 'timestamptz', nullable: true })
  authTime!: Date | null;

  /** The approving session had shown a second factor: with REQUIRE_SECOND_FACTOR, a grant without one issues nothing more. */
  @Column({ name: 'second_factor', type: 'boolean', default: false })
  secondFactor!: boolean;

  /** The approving browser session's key (`web_sessions.sid`), where it is known. */
  @Column({ name: 'web_session', type: 'text', nullable: true })
  webSession!: string | null;

  /**
   * The identity-provider link the approving session was signed in through (its
   * `web_sessions.federated_link_id` when the grant was recorded); null for a session signed in
   * otherwise. What ends that link's sessions ends this grant too (TokensService.revokeGrantsOfFederatedLinks).
   */
  @Column({ name: 'federated_link_id', type: 'uuid', nullable: true })
  federatedLinkId!: string | null;

  /** The organization it was granted in, where there is one. */
  @Column({ name: 'organization_id', type: 'uuid', nullable: true })
  organizationId!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  /** When it was revoked (its tokens with it); null while it stands. */
  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
