import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A public OAuth client (RFC 8628): who may start a device login, and the name the approval page shows. */
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
}
