import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { isUniqueViolation } from '../database/sql.js';
import { badRequest, conflict } from '../common/api-exception.js';
import { looksLikeEmail } from '@prospect/contract';
import { AppConfig } from '../config/app-config.js';
import { Clock } from '../common/clock.js';
import { DUMMY_HASH_PROMISE, hashPassword, verifyPassword } from './password.js';
import { AdminSetupCodes, InvalidSetupCodeError } from './admin-setup-codes.js';
import type { User } from './user.entity.js';
import { type AdminUserRow, type LinkedAccount, UsersRepository } from './users.repository.js';
import { AuditService } from '../audit/audit.service.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';

export type { AdminUserRow };

export const MIN_PASSWORD_LENGTH = 8;

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

@Injectable()
export class UsersService implements OnApplicationBootstrap {
  private readonly logger = new Logger(UsersService.name);

  constructor(
    private readonly uow: UnitOfWork,
    private readonly users: UsersRepository,
    private readonly config: AppConfig,
    private readonly adminSetup: AdminSetupCodes,
    private readonly clock: Clock,
    private readonly audit: AuditService,
  ) {}

  /**
   * Headless deployments get their admin from PROSPECT_ADMIN_EMAIL / _PASSWORD, idempotently
   * however many instances start at once. Without them, as long as there is no admin, one
   * setup code per deployment: printed by the instance that makes it, valid until used.
   */
  async onApplicationBootstrap(): Promise<void> {
    if (this.config.admin) {
      const { email, password } = this.config.admin;
      const address = normalizeEmail(email);
      let done: 'created' | 'promoted' | 'unchanged' | 'taken' = await this.users.ensureAdmin({ email: address, name: address.split('@')[0]!, passwordHash: await hashPassword(password) });
      // An account with the operator's own password is the operator's (demoted since, say): made admin again.
      if (done === 'taken' && (await this.authenticate(address, password))) done = (await this.users.promote(address)) ? 'promoted' : 'unchanged';
      if (done !== 'taken') {
        await this.adminSetup.withdraw();
        if (done !== 'unchanged') this.logger.log(`${done} admin ${address}`);
        return;
      }
      // Someone else signed up with that address first: making them the admin would hand the
      // deployment to whoever did (issue #31). The setup code below still works if no admin exists.
      this.logger.warn(
        `PROSPECT_ADMIN_EMAIL ${address} already has an account with another password, so it was not made an administrator: choose another address, or have an admin promote that account on /admin/users.`,
      );
    }
    const issue = await this.adminSetup.issueIfNoAdmin();
    if (issue && 'code' in issue) {
      this.logger.warn(
        `No administrator yet. To become it, sign up at ${this.config.publicUrl}/signup?setup_code=${issue.code} (the code works once, on any instance, until used).`,
      );
    } else if (issue) {
      this.logger.warn(
        `No administrator yet. A setup code was printed at ${issue.issuedAt.toISOString()} by the instance that made it, and works until used; lost it? \`node apps/api/dist/main.js setup-code\` prints a new one.`,
      );
    }
  }

  findById(id: string, tx?: Tx): Promise<User | null> {
    return this.users.findById(id, tx);
  }

  findByEmail(email: string, tx?: Tx): Promise<User | null> {
    return this.users.findByEmail(normalizeEmail(email), tx);
  }

  /**
   * The person a browser session is signed in as, read afresh; for a session started through an
   * identity provider (`federatedLinkId`), null as well once that link no longer lets it in (the
   * provider refused the person, or was disabled).
   */
  async findForSession(id: string, federatedLinkId?: string): Promise<User | null> {
    if (federatedLinkId === undefined) return this.users.findById(id);
    if (!UUID.test(federatedLinkId)) return null;
    const found = await this.users.findWithLiveLink(id, federatedLinkId);
    return found?.linkLive ? found.user : null;
  }

  /**
   * Creates a person, a user unless `role` says otherwise (in `tx` when given).
   * Nobody becomes an admin by signing up first: an admin comes from PROSPECT_ADMIN_* or the
   * one-time setup code.
   * @throws ApiException 409 when the address has an account.
   */
  async create(input: { email: string; name: string; password?: string; role?: User['role']; emailVerified?: boolean }, tx?: Tx): Promise<User> {
    const passwordHash = input.password ? await hashPassword(input.password) : null;
    return this.insert({ ...input, passwordHash, role: input.role ?? 'user', emailVerifiedAt: input.emailVerified ? this.clock.now() : null }, tx);
  }

  /**
   * The first administrator of a deployment without PROSPECT_ADMIN_*: the sign-up that
   * presents the setup code printed in the log. The code is used up in the same
   * transaction that creates the account, so of two sign-ups with it only one succeeds.
   * Its address counts as verified, as PROSPECT_ADMIN_EMAIL's does: the code came from the
   * operator's console, and a verification mail of an instance without SMTP_URL goes to a log
   * that a restart may overwrite; turning SMTP_URL on later (REQUIRE_EMAIL_VERIFICATION with it)
   * would otherwise leave the one administrator unable to approve an admin login (#49).
   */
  async createFirstAdmin(input: { email: string; name: string; password: string }, setupCode: string): Promise<User> {
    const passwordHash = await hashPassword(input.password);
    const user = await this.uow.run(async (tx) => {
      if (!(await this.adminSetup.consume(setupCode, tx))) throw new InvalidSetupCodeError();
      return this.insert({ ...input, passwordHash, role: 'admin', emailVerifiedAt: this.clock.now() }, tx);
    });
    this.logger.log(`${normalizeEmail(input.email)} signed up with the setup code and is the administrator`);
    return user;
  }

  private async insert(input: { email: string; name: string; passwordHash: string | null; role: User['role']; emailVerifiedAt?: Date | null }, tx?: Tx): Promise<User> {
    // Every door checks the address already; this keeps a future one from storing what mail would not deliver as typed.
    if (!looksLikeEmail(normalizeEmail(input.email))) throw badRequest('Please enter a valid e-mail address.');
    try {
      return await this.users.insert({ ...input, email: normalizeEmail(input.email), name: input.name.trim() }, tx);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('An account with this e-mail address already exists.');
      throw err;
    }
  }

  /** Whether the account has a password (one made by an identity provider has none until its owner sets one). */
  hasPassword(id: string): Promise<boolean> {
    return this.users.hasPassword(id);
  }

  /** A new name or a new password hash (a new credential epoch) with its audit event, in one statement; false when there is no such user. */
  changeWithAudit(id: string, change: { name: string } | { passwordHash: string }, event: 'account.rename' | 'password.change', ip: string | null): Promise<boolean> {
    return this.users.changeWithAudit(id, change, event, this.clock.now(), ip);
  }

  /**
   * Deletes an account in a transaction of its own, unless it is the last administrator (the
   * admins are locked first, so two admins deleting themselves at once cannot leave none). Its
   * audit events stay, without its addresses or details (audit/ forgets them in the same
   * transaction), with one `account.delete` event without personal data (UsersRepository.deleteWithEvent).
   * @param checks what a module above asks before the account goes, in the same transaction (it may
   *   take its own locks there and throw to refuse: the organizations of which it is the only owner).
   * @returns 'deleted', 'last-admin' or 'unknown'.
   */
  deleteAccount(id: string, checks?: (tx: Tx) => Promise<void>): Promise<'deleted' | 'last-admin' | 'unknown'> {
    return this.uow.run(async (tx) => {
      const now = this.clock.now();
      // The checks first: they lock the person's organizations, which an acceptance of an invitation
      // locks before it share-locks the account's row (organizations/), so the two never wait on each other in a circle.
      await checks?.(tx);
      const admins = await this.users.lockAdmins(tx);
      if (admins.length === 1 && admins[0] === id) return 'last-admin';
      await this.audit.forgetDetailsOf(tx, id);
      return (await this.users.deleteWithEvent(tx, id, now)) ? 'deleted' : 'unknown';
    });
  }

  /** A mailed address-change link was used (accounts/), in `tx`: the new address, verified, a new credential epoch; the account. @throws a unique violation when the address is taken by now. */
  setEmailFromLink(tx: Tx, id: string, newEmail: string, now: Date): Promise<LinkedAccount | undefined> {
    return this.users.setEmailFromLink(tx, id, newEmail, now);
  }

  /** A mailed reset or invitation link was used (accounts/), in `tx`: the password, the address verified, a new credential epoch; the account. */
  setPasswordFromLink(tx: Tx, id: string, passwordHash: string, now: Date): Promise<(LinkedAccount & { credentialEpoch: number }) | undefined> {
    return this.users.setPasswordFromLink(tx, id, passwordHash, now);
  }

  /** A mailed verification link was used (accounts/), in `tx`: the address counts as verified; the account. */
  markEmailVerified(tx: Tx, id: string, now: Date): Promise<LinkedAccount | undefined> {
    return this.users.markEmailVerified(tx, id, now);
  }

  /** An identity-provider link proven (federation/), in `tx`: the address verified; the password ended too with `endPassword` (a mailed proof). */
  recordProvenLink(tx: Tx, id: string, now: Date, endPassword: boolean): Promise<void> {
    return this.users.recordProvenLink(tx, id, now, endPassword);
  }

  /** One page of people for the admin list (UsersRepository.listForAdmin). */
  listForAdmin(search: string, limit: number, offset: number, id?: string): Promise<{ rows: AdminUserRow[]; total: number }> {
    return this.users.listForAdmin(search, limit, offset, this.clock.now(), id);
  }

  /** Holds the person's row until `tx` ends against anything that share-locks it (a code's exchange checking the account). */
  lockAgainstSharers(tx: Tx, id: string): Promise<void> {
    return this.users.lockAgainstSharers(tx, id);
  }

  /** Locks every enabled administrator's row in `tx`, so "not the last admin" holds until it commits; their ids. */
  lockAdmins(tx: Tx): Promise<string[]> {
    return this.users.lockAdmins(tx);
  }

  /** Disables or enables, in `tx`, audited with the acting admin (none: an organization's directory, scim/); false when nothing changed. */
  setDisabled(tx: Tx, id: string, disabled: boolean, now: Date, adminId: string | null, ip: string | null): Promise<boolean> {
    return this.users.setDisabled(tx, id, disabled, now, adminId, ip);
  }

  /** Makes an admin or a user, in `tx`, audited with the acting admin; false when nothing changed. */
  setRole(tx: Tx, id: string, role: User['role'], now: Date, adminId: string, ip: string | null): Promise<boolean> {
    return this.users.setRole(tx, id, role, now, adminId, ip);
  }

  /** A service account's row, in `tx` (service-accounts/ owns the rest of it); its id. */
  insertServiceAccount(tx: Tx, name: string, now: Date): Promise<string> {
    return this.users.insertServiceAccount(tx, name, now);
  }

  /** A service account's new name, in `tx`. */
  renameServiceAccount(tx: Tx, id: string, name: string, now: Date): Promise<void> {
    return this.users.renameServiceAccount(tx, id, name, now);
  }

  /** Deletes service accounts' rows, with their tokens, in `tx`; how many. */
  deleteServiceAccounts(tx: Tx, ids: readonly string[]): Promise<number> {
    return this.users.deleteServiceAccounts(tx, ids);
  }

  /** A password sign-in succeeded (the admin list shows when). */
  recordSignIn(id: string): Promise<void> {
    return this.users.recordSignIn(id, this.clock.now());
  }

  /** The user for these credentials, or null; takes the same time whether the e-mail exists or not. */
  async authenticate(email: string, password: string): Promise<User | null> {
    const user = await this.users.findWithPasswordHash(normalizeEmail(email));
    const check = await verifyPassword(password, user?.passwordHash ?? (await DUMMY_HASH_PROMISE));
    if (!user?.passwordHash || !check.ok) return null;
    if (check.rehash) {
      // Made with older parameters: replace it now that the password is known to be right.
      await this.users.setPasswordHash(user.id, await hashPassword(password));
      this.logger.log(`upgraded the password hash of ${user.email}`);
    }
    delete (user as Partial<User>).passwordHash;
    return user;
  }
}
