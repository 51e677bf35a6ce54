import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * A refresh token (`prsr_…`): used once, then rotated. Only its SHA-256 is stored. Its family is
 * every access and refresh token descended from one grant (`grantId`).
 */
@Entity({ name: 'refresh_tokens' })
export class RefreshToken {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'token_hash', type: 'bytea', unique: true, select: false })
  tokenHash!: Buffer;

  /** The family: the grant the first pair came from. */
  @Column({ name: 'grant_id', type: 'uuid' })
  grantId!: string;

  @Column({ name: 'user_id', type: 'uuid' })
  userId!: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  /** Sliding: REFRESH_TOKEN_TTL_SECONDS after its issue, never past `familyExpiresAt`. */
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  /** The absolute cap of the family: REFRESH_TOKEN_MAX_LIFETIME_SECONDS after the first pair. */
  @Column({ name: 'family_expires_at', type: 'timestamptz' })
  familyExpiresAt!: Date;

  /** The token it was rotated from (unique: a token has at most one successor, a family is one chain). */
  @Column({ name: 'parent_id', type: 'uuid', nullable: true })
  parentId!: string | null;

  /** When it was exchanged for its successor; presenting it again once that successor was used is a reuse. */
  @Column({ name: 'rotated_at', type: 'timestamptz', nullable: true })
  rotatedAt!: Date | null;

  /** The successor pair, sealed under this token's own value, kept until the successor is used or this token expires. */
  @Column({ name: 'successor_sealed', type: 'bytea', nullable: true, select: false })
  successorSealed!: Buffer | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
