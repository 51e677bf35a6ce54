import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export type UserRole = 'user' | 'admin';

export type UserKind = 'person' | 'service_account';

/** One person, one id: the same row whether they sign in on the web, by device or by token. */
@Entity({ name: 'users' })
export class User {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  /**
   * Stored trimmed and lower-cased, so uniqueness ignores letter case. Null only for a service
   * account (kind), which no query of people returns: UsersRepository reads `kind = 'person'`.
   */
  @Column({ type: 'text', unique: true, nullable: true })
  email!: string;

  /** A person, or a service account of an organization (issue #45: service-accounts/). */
  @Column({ type: 'text', default: 'person' })
  kind!: UserKind;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', default: 'user' })
  role!: UserRole;

  /** argon2id (or, until its next sign-in, the previous scrypt) hash with its parameters and salt; never selected unless asked for. */
  @Column({ name: 'password_hash', type: 'text', nullable: true, select: false })
  passwordHash!: string | null;

  /** Set when an administrator disabled the account: it cannot sign in, and its tokens were revoked. */
  @Column({ name: 'disabled_at', type: 'timestamptz', nullable: true })
  disabledAt!: Date | null;

  /** Set when the owner followed a mailed link (a verification, an invitation or a reset). */
  @Column({ name: 'email_verified_at', type: 'timestamptz', nullable: true })
  emailVerifiedAt!: Date | null;

  /**
   * Moves on whenever who controls the account changes (a new password by any path, a new
   * address, a disable, an address proven by someone other than its creator): web sessions and
   * mailed links record the epoch they were issued under and end when it moves on.
   */
  @Column({ name: 'credential_epoch', type: 'integer', default: 0 })
  credentialEpoch!: number;

  @Column({ name: 'last_sign_in_at', type: 'timestamptz', nullable: true })
  lastSignInAt!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/** A user as the contract shows it (seed §2.1). */
export const toPublicUser = (user: Pick<User, 'id' | 'email' | 'name'>) => ({ id: user.id, email: user.email, name: user.name });
