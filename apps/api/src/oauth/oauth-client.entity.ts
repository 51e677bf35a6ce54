import type { ClientType } from '@prospect/contract';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * An OAuth client: who may start a device login (RFC 8628) or send people to the authorization
 * endpoint (issue #33), and the name the approval and consent pages show.
 */
@Entity({ name: 'oauth_clients' })
export class OAuthClient {
  /** The `client_id`: lower-case letters, digits, `.`, `_` and `-`, 3 to 64 characters. */
  @PrimaryColumn({ type: 'text' })
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  /** The scopes it may request (space-separated, from SCOPES); what it gets when it asks for none. */
  @Column({ name: 'allowed_scopes', type: 'text', default: 'profile' })
  allowedScopes!: string;

  /** `prospect-cli`: the custom device routes act as it; it cannot be removed. */
  @Column({ name: 'built_in', type: 'boolean', default: false })
  builtIn!: boolean;

  @Column({ name: 'created_by_user_id', type: 'uuid', nullable: true })
  createdByUserId!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  /** Set by an admin: it starts no device login, and its tokens were revoked then. */
  @Column({ name: 'disabled_at', type: 'timestamptz', nullable: true })
  disabledAt!: Date | null;

  /** `public` (PKCE only, the device flow) or `confidential` (authenticates with its secret). */
  @Column({ type: 'text', default: 'public' })
  type!: ClientType;

  /** A confidential client's secret's SHA-256 (32 random bytes: no stretching needed); null for a public one. */
  @Column({ name: 'secret_hash', type: 'bytea', nullable: true, select: false })
  secretHash?: Buffer | null;

  /** Where the code flow may send people back, compared exactly (a loopback one on any port); none: no code flow. */
  @Column({ name: 'redirect_uris', type: 'text', array: true, default: '{}' })
  redirectUris!: string[];

  /** Browser origins that may call the token, revocation and userinfo endpoints for it (CORS). */
  @Column({ name: 'allowed_origins', type: 'text', array: true, default: '{}' })
  allowedOrigins!: string[];

  /** Where its back-channel logout tokens go when a grant of it ends (issue #46); null: none. */
  @Column({ name: 'backchannel_logout_uri', type: 'text', nullable: true })
  backchannelLogoutUri!: string | null;
}
