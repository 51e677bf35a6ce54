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

  /** The scope its tokens are granted (space-separated, from SCOPES): what the client asked for and may have. */
  @Column({ type: 'text', default: '' })
  scope!: string;

  /**
   * When the `admin` scope of this login ends: ADMIN_GRANT_SECONDS after its approval, for a login
   * that asked for `admin`; null otherwise. Its tokens carry `admin` only until then.
   */
  @Column({ name: 'admin_until', type: 'timestamptz', nullable: true })
  adminUntil!: Date | null;

  /**
   * The account's credential epoch when the grant was approved (or its code signed in for): its
   * tokens, refreshes included, end when the account's moves on (grants/grant-rules.ts). Null until decided.
   */
  @Column({ name: 'credential_epoch', type: 'integer', nullable: true })
  credentialEpoch!: number | null;

  /** How the approving session last proved its person (RFC 8176); null until approved, or for an approval older than this record. */
  @Column({ type: 'text', array: true, nullable: true })
  amr!: string[] | null;

  /** The approving session had shown a second factor: with REQUIRE_SECOND_FACTOR, a grant without one issues nothing more. */
  @Column({ name: 'second_factor', type: 'boolean', default: false })
  secondFactor!: boolean;

  @Column({ name: 'requested_ip', type: 'text', nullable: true })
  requestedIp!: string | null;

  /** The starting program's User-Agent (at most 200 characters), shown to the person who approves. */
  @Column({ name: 'user_agent', type: 'text', nullable: true })
  userAgent!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt!: Date;

  /** The last poll that was answered; the database enforces the interval across instances. */
  @Column({ name: 'last_polled_at', type: 'timestamptz', nullable: true })
  lastPolledAt!: Date | null;

  @Column({ name: 'redeemed_at', type: 'timestamptz', nullable: true })
  redeemedAt!: Date | null;

  /** The authorized answer, sealed with a key only the device code gives; erased REPLY_WINDOW_SECONDS after redemption. */
  @Column({ name: 'reply_sealed', type: 'bytea', nullable: true, select: false })
  replySealed!: Buffer | null;
}
