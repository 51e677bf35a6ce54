import { Injectable } from '@nestjs/common';
import { type AdminUser, ERROR_CODES } from '@prospect/contract';
import { InvitationsService } from '../accounts/invitations.service.js';
import { PasswordResetService } from '../accounts/password-reset.service.js';
import { SecondFactorsService } from '../accounts/second-factors.service.js';
import { PasskeysService } from '../accounts/passkeys.service.js';
import { AuditService } from '../audit/audit.service.js';
import { ApiException } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { Metrics } from '../metrics/metrics.js';
import { TokensService } from '../tokens/tokens.service.js';
import { TokenRevocations } from '../tokens/token-revocations.js';
import { type AdminUserRow, UsersService } from '../users/users.service.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { SignInBlocksService } from './sign-in-blocks.service.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';

/**
 * The grant an administrator acts with through the administration API: the bearer token, and its
 * device login (session) for a session's token. Recorded beside what it did (`admin.api_action`),
 * so a session or token used for administration can be traced and its acts found.
 */
export interface AdminGrant {
  tokenId: string;
  grantId: string | null;
}

/** People per page of the admin list. */
export const USERS_PER_PAGE = 50;

/** An admin action refused by a rule, with the sentence that says which (400, 404 or 409 on the API; the pages show the sentence). */
export class AdminUserRefusal extends ApiException {}

const notFound = () => new AdminUserRefusal(404, ERROR_CODES.notFound, 'There is no such account.');
const lastAdmin = () =>
  new AdminUserRefusal(409, ERROR_CODES.conflict, 'This is the only administrator: make someone else an administrator first, so that the service keeps one.');

export const toAdminUser = (row: AdminUserRow): AdminUser => ({
  id: row.id,
  email: row.email,
  name: row.name,
  admin: row.role === 'admin',
  disabled: row.disabledAt !== null,
  emailVerified: row.emailVerifiedAt !== null,
  invited: row.invited,
  secondFactor: row.secondFactor,
  createdAt: row.createdAt.toISOString(),
  lastSignInAt: row.lastSignInAt?.toISOString() ?? null,
  activeCliSessions: row.activeCliSessions,
});

/**
 * What an administrator does to people, on /admin/users and /api/admin/users alike. Every
 * change is one transaction with its audit event naming the acting admin; the rule "there is
 * always an enabled administrator" holds under concurrency because the admins' rows are locked first.
 */
@Injectable()
export class AdminUsersService {
  constructor(
    private readonly users: UsersService,
    private readonly tokens: TokensService,
    private readonly webSessions: WebSessions,
    private readonly revocations: TokenRevocations,
    private readonly resets: PasswordResetService,
    private readonly invitations: InvitationsService,
    private readonly signInBlocks: SignInBlocksService,
    private readonly factors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly audit: AuditService,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
    private readonly uow: UnitOfWork,
  ) {}

  /** One page (from 1) of people matching `search` in name or e-mail, newest first. */
  async list(search: string, page: number): Promise<{ users: AdminUser[]; total: number; page: number; perPage: number }> {
    const { rows, total } = await this.users.listForAdmin(search.trim(), USERS_PER_PAGE, (page - 1) * USERS_PER_PAGE);
    return { users: rows.map(toAdminUser), total, page, perPage: USERS_PER_PAGE };
  }

  /** @throws AdminUserRefusal 404 */
  async get(id: string): Promise<AdminUser> {
    const { rows } = await this.users.listForAdmin('', 1, 0, id);
    if (!rows[0]) throw notFound();
    return toAdminUser(rows[0]);
  }

  /**
   * Disables or enables a person and/or makes or removes an administrator, in one transaction
   * with its audit events. Disabling ends their every access token, refresh family and web
   * session, and every replica's cache forgets their tokens (the users and tokens triggers).
   * Nobody disables their own account, and the last enabled administrator stays one: the
   * admins' rows are locked first, so two admins demoting each other at once leave one.
   * @throws AdminUserRefusal
   */
  async update(id: string, changes: { disabled?: boolean; admin?: boolean }, adminId: string, ip: string | null, grant?: AdminGrant): Promise<AdminUser> {
    if (changes.disabled === true && id === adminId) throw new AdminUserRefusal(400, ERROR_CODES.invalidRequest, 'You cannot disable your own account.');
    if (!(await this.users.findById(id))) throw notFound();
    const revoked = await this.uow.run(async (tx) => {
      const admins = await this.users.lockAdmins(tx);
      const staysAdmin = changes.admin !== false && changes.disabled !== true;
      if (admins.includes(id) && !staysAdmin && admins.every((other) => other === id)) throw lastAdmin();
      const now = this.clock.now();
      if (changes.admin !== undefined && (await this.users.setRole(tx, id, changes.admin ? 'admin' : 'user', now, adminId, ip))) {
        await this.recordGrant(changes.admin ? 'promote' : 'demote', id, adminId, ip, grant, tx);
      }
      if (changes.disabled === false) await this.users.setDisabled(tx, id, false, now, adminId, ip);
      if (changes.disabled !== true || !(await this.users.setDisabled(tx, id, true, now, adminId, ip))) return null;
      // Their tokens end, and the tokens they made for others as an administrator with them.
      const tokens = await this.tokens.revokeEverythingOfUserIn(tx, id, now, ip);
      await this.webSessions.endAllFor(id, tx);
      return tokens;
    });
    if (revoked !== null) {
      this.revocations.userRevoked(id);
      this.revocations.tokensRevoked(revoked.othersTokens);
      this.metrics.token('revoked', revoked.ended + revoked.othersTokens.length);
    }
    return this.get(id);
  }

  /** What an administrator did through the API, with the grant they did it with (in `tx` when given, so both or neither). */
  private async recordGrant(action: string, accountId: string, adminId: string, ip: string | null, grant: AdminGrant | undefined, tx?: Tx): Promise<void> {
    if (!grant) return;
    const detail = { action, accountId, tokenId: grant.tokenId, ...(grant.grantId ? { deviceLoginId: grant.grantId } : {}) };
    await this.audit.record('admin.api_action', { userId: adminId, ip, detail }, tx);
  }

  /** Mails the person a password-reset link. @throws AdminUserRefusal 404 */
  async sendResetLink(id: string, adminId: string, ip: string | null): Promise<void> {
    const user = await this.users.findById(id);
    if (!user) throw notFound();
    if (user.disabledAt) throw new AdminUserRefusal(400, ERROR_CODES.invalidRequest, 'This account is disabled: enable it before sending it a reset link.');
    if (!(await this.resets.sendLinkTo(id))) throw notFound();
    await this.audit.record('admin.user_reset_link', { userId: adminId, ip, detail: { accountId: id } });
  }

  /**
   * Removes the person's authenticator app, recovery codes and passkeys (a lost phone), and ends their web
   * sessions, so the next sign-in is with the password alone (or sets a new app up, with
   * REQUIRE_SECOND_FACTOR). @throws AdminUserRefusal 404
   */
  async removeSecondFactor(id: string, adminId: string, ip: string | null, grant?: AdminGrant): Promise<boolean> {
    if (!(await this.users.findById(id))) throw notFound();
    const [app, passkeys] = [await this.factors.remove(id, ip, adminId), await this.passkeys.removeAllOf(id)];
    const removed = app || passkeys > 0;
    if (removed) {
      await this.webSessions.endAllFor(id);
      await this.recordGrant('remove_second_factor', id, adminId, ip, grant);
    }
    return removed;
  }

  /** Lifts the account's sign-in block; whether it had failures counted. @throws AdminUserRefusal 404 */
  async clearSignInBlock(id: string, adminId: string, ip: string | null): Promise<boolean> {
    const user = await this.users.findById(id);
    if (!user) throw notFound();
    return this.signInBlocks.clear(user.email, adminId, ip);
  }

  /** Invites a person by e-mail. @throws ApiException 409 when the address has an account. */
  async invite(input: { email: string; name: string }, adminId: string, ip: string | null, grant?: AdminGrant): Promise<AdminUser> {
    const id = await this.invitations.invite(input, adminId, ip);
    await this.recordGrant('invite', id, adminId, ip, grant);
    return this.get(id);
  }
}
