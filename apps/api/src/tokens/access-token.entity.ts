import { Column, Entity, JoinColumn, ManyToOne, PrimaryGeneratedColumn, type Relation } from 'typeorm';
import { User } from '../users/user.entity.js';

export type TokenOrigin = 'device' | 'direct' | 'admin' | 'service_account';

/** A CLI bearer token. Only its SHA-256 is stored; the token itself is shown once. */
@Entity({ name: 'access_tokens' })
export class AccessToken {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'token_hash', type: 'bytea', unique: true, select: false })
  tokenHash!: Buffer;

  @Column({ name: 'user_id', type: 'uuid' })
  userId!: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: Relation<User>;

  @Column({ type: 'text', nullable: true })
  label!: string | null;

  /** How it was issued: by device login, directly for oneself, by an admin, or to a service account (client credentials). */
  @Column({ type: 'text' })
  origin!: TokenOrigin;

  /** For a grant's tokens (device logins, code grants): the grant it hangs off, its family. */
  @Column({ name: 'grant_id', type: 'uuid', nullable: true })
  grantId!: string | null;

  /**
   * The scope it was granted, space-separated (SCOPES). Null for a token made before scopes were
   * stored on tokens: its grant's scope, or the CLI's for one made directly.
   */
  @Column({ type: 'text', nullable: true })
  scope!: string | null;

  /** The token it was made with (a token made on the site, or with a token), if a token made it. */
  @Column({ name: 'minted_by_token_id', type: 'uuid', nullable: true })
  mintedByTokenId!: string | null;

  /** The grant (session) whose token made it, if one did: the family it lives and dies with. */
  @Column({ name: 'minted_by_grant_id', type: 'uuid', nullable: true })
  mintedByGrantId!: string | null;

  /** For a service account's token exchanged with a CI's token (RFC 8693): the federation that let it through, which it ends with. */
  @Column({ name: 'minted_by_federation_id', type: 'uuid', nullable: true })
  mintedByFederationId!: string | null;

  @Column({ name: 'created_ip', type: 'text', nullable: true })
  createdIp!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  /** Touched at most once a minute, so verifying stays a read. */
  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt!: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
