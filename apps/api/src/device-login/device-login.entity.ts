import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * pending → approved → redeemed (the one poll that got the token), or
 * pending → denied. An expired login is reported as denied.
 */
export type DeviceLoginStatus = 'pending' | 'approved' | 'denied' | 'redeemed' | 'cancelled';

/** One `prospect auth:login` waiting for a person to approve it in a browser. */
@Entity({ name: 'device_logins' })
export class DeviceLogin {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  /** SHA-256 of the device code; the code itself is only in the start response. */
  @Column({ name: 'device_code_hash', type: 'bytea', unique: true, select: false })
  deviceCodeHash!: Buffer;

  /** 8 letters without separator, e.g. BCDFGHJK; unique among pending logins. */
  @Column({ name: 'user_code', type: 'text' })
  userCode!: string;

  @Column({ type: 'text', default: 'pending' })
  status!: DeviceLoginStatus;

  /** Who approved or denied it. */
  @Column({ name: 'decided_by_user_id', type: 'uuid', nullable: true })
  decidedByUserId!: string | null;

  @Column({ name: 'decided_at', type: 'timestamptz', nullable: true })
  decidedAt!: Date | null;

  /** What the CLI said about itself, shown on the approval page. */
  @Column({ name: 'client_name', type: 'text', nullable: true })
  clientName!: string | null;

  @Column({ type: 'text', nullable: true })
  hostname!: string | null;

  /** The OAuth client that started it: `prospect-cli` for the custom routes. */
  @Column({ name: 'client_id', type: 'text', default: 'prospect-cli' })
  clientId!: string;

  /** The scope asked for (space-separated, from SCOPES): what the client asked for and may have; its grant keeps what was granted. */
  @Column({ type: 'text', default: '' })
  scope!: string;

  /** Its grant (grants/), once approved: what the approval granted, and the family its tokens hang off. */
  @Column({ name: 'grant_id', type: 'uuid', nullable: true })
  grantId!: string | null;

  @Column({ name: 'requested_ip', type: 'text', nullable: true })
  requestedIp!: string | null;

  /** The starting program's User-Agent (at most 200 characters), shown to the person who approves. */
  @Column({ name: 'user_agent', type: 'text', nullable: true })
  userAgent!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  @Column({ name: 'redeemed_at', type: 'timestamptz', nullable: true })
  redeemedAt!: Date | null;

  /** The authorized answer, sealed with a key only the device code gives; erased REPLY_WINDOW_SECONDS after redemption. */
  @Column({ name: 'reply_sealed', type: 'bytea', nullable: true, select: false })
  replySealed!: Buffer | null;
}
