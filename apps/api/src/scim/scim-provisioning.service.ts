import { Injectable } from '@nestjs/common';
import type { ScimGroupRole } from '@prospect/contract';
import { type ScimPatchOperation, patchBodyValidation, scimPatch } from 'scim-patch';
import { AuditService } from '../audit/audit.service.js';
import type { AuthEventType } from '../audit/auth-event.entity.js';
import { ApiException } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { isUniqueViolation } from '../database/sql.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { OrganizationsService } from '../organizations/organizations.service.js';
import { TokenRevocations } from '../tokens/token-revocations.js';
import { TokensService } from '../tokens/tokens.service.js';
import { UsersService } from '../users/users.service.js';
import { WebSessions } from '../web-sessions/web-sessions.js';
import { type ListQuery, ScimDirectoryRepository, type ScimGroupRow, type ScimUserRow } from './scim-directory.repository.js';
import { invalidSyntax, invalidValue, mutability, ScimError, type ScimType, scimNotFound, uniqueness } from './scim-error.js';
import { accountName, groupInput, type ScimGroupResource, type ScimUserInput, type ScimUserResource, SCHEMAS, toScimGroup, toScimUser, userInput } from './scim-resources.js';
import { ScimSettingsRepository } from './scim-settings.repository.js';

/** The organization a SCIM request acts for (ScimTokenGuard found it by the token), and where its resources live. */
export interface ScimContext {
  organizationId: string;
  slug: string;
  name: string;
  tokenId: string;
  /** Who made the token (an admin or owner of the organization while it works). */
  makerId: string;
  /** `{PUBLIC_URL}/scim/v2/{slug}`: the base of every `meta.location`. */
  base: string;
}

/** How the membership of a person changed with a request, said in the provisioning log. */
const VIA = 'scim';

/**
 * What an organization's directory does through SCIM (issue #47): people and groups, and what they
 * mean here. A provisioned person is a member of the organization while `active`; their role is
 * `admin` when a group of theirs is mapped to it by the organization's admins, else `member` (an
 * owner stays an owner: owners are named by owners, by hand).
 *
 * Every change runs in one transaction that first locks the organization's row, as every change of
 * its members does (OrganizationsService.lockForChange): two deactivations at once, a deactivation
 * and an owner leaving, a group's change and a mapping's run one after the other, and the
 * last-owner rule holds (a directory cannot remove the last owner: 409 `mutability`).
 *
 * A person's membership is read at each request by every door (OrgMembershipGuard, /me, userinfo),
 * so removing it ends, at their next request, whatever of theirs acts for the organization: CLI
 * tokens, refreshed ones, code grants. With `deactivateDisablesAccount`, a person whose only
 * organization it is (and whose address is in its verified domains) is disabled too, as an
 * instance administrator disables: every token, refresh family and browser session ends.
 */
@Injectable()
export class ScimProvisioningService {
  constructor(
    private readonly directory: ScimDirectoryRepository,
    private readonly settings: ScimSettingsRepository,
    private readonly organizations: OrganizationsService,
    private readonly users: UsersService,
    private readonly tokens: TokensService,
    private readonly revocations: TokenRevocations,
    private readonly webSessions: WebSessions,
    private readonly audit: AuditService,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
  ) {}

  // Users

  /**
   * Provisions a person: their account, made without a password (they sign in through the
   * organization's provider) with the address verified (it is in a domain the organization proved it
   * holds), or the account that has the address already when it verified it; then, when active, a
   * member. An account that has the address without having verified it is refused (409): linking
   * it would hand the organization to whoever registered the address without owning it.
   */
  async createUser(ctx: ScimContext, body: unknown): Promise<ScimUserResource> {
    const input = userInput(body);
    try {
      const row = await this.uow.run(async (tx) => {
        await this.organizations.lockForChange(tx, ctx.organizationId);
        await this.checkDomain(tx, ctx, input.userName);
        await this.checkUnique(tx, ctx, input, null);
        const existing = await this.users.findByEmail(input.userName, tx);
        if (existing && !existing.emailVerifiedAt) {
          throw uniqueness(`An account of ${input.userName} exists and has not confirmed its address: it cannot be provisioned until its owner confirms it.`);
        }
        const account = existing ?? (await this.users.create({ email: input.userName, name: accountName(input), emailVerified: true }, tx));
        const row = await this.directory.insertUser(tx, ctx.organizationId, account.id, input, input.active, existing ? null : account.credentialEpoch, this.clock.now());
        const role = input.active ? await this.join(tx, ctx, row) : null;
        await this.record(tx, ctx, 'scim.user_provision', { scimUserId: row.id, memberId: account.id, userName: row.userName, externalId: row.externalId, linked: existing !== null, role });
        return row;
      });
      return toScimUser(row, ctx.base);
    } catch (err) {
      // Another request provisioned the address or the account in between (the unique indexes decide).
      if (isUniqueViolation(err) || (err instanceof ApiException && !(err instanceof ScimError) && err.getStatus() === 409)) {
        throw uniqueness(`${input.userName} is provisioned already, or its externalId is another person’s.`);
      }
      throw err;
    }
  }

  async getUser(ctx: ScimContext, id: string): Promise<ScimUserResource> {
    return toScimUser(await this.user(ctx, id), ctx.base);
  }

  async listUsers(ctx: ScimContext, query: ListQuery) {
    const { rows, total } = await this.directory.listUsers(ctx.organizationId, query);
    return listResponse(rows.map((r) => toScimUser(r, ctx.base)), total, query);
  }

  /** PUT: the person's attributes replaced; `userName` cannot change (400 `mutability`): it is the account's address. */
  async replaceUser(ctx: ScimContext, id: string, body: unknown): Promise<ScimUserResource> {
    const input = userInput(body);
    return this.changeUser(ctx, id, () => input);
  }

  /**
   * PATCH (RFC 7644 §3.5.2), applied by scim-patch to the person as shown, then kept as a PUT of the
   * result: `{"op":"replace","value":{"active":false}}` (Okta, Entra) and
   * `{"op":"replace","path":"active","value":"False"}` (Entra's strings) alike.
   */
  async patchUser(ctx: ScimContext, id: string, body: unknown): Promise<ScimUserResource> {
    const operations = patchOperations(body);
    return this.changeUser(ctx, id, (current) => userInput(applyPatch(current, operations)));
  }

  /** DELETE: the membership ends as a deactivation ends it (the last owner stays: 409), and the person is no longer provisioned. */
  async deleteUser(ctx: ScimContext, id: string): Promise<void> {
    await this.uow.run(async (tx) => {
      await this.organizations.lockForChange(tx, ctx.organizationId);
      const row = await this.directory.findUser(ctx.organizationId, id, tx, true);
      if (!row) throw scimNotFound('User', id);
      const accountDisabled = row.active ? (await this.leave(tx, ctx, row)) !== null : row.disabledAccount;
      await this.directory.deleteUser(tx, row.id);
      await this.record(tx, ctx, 'scim.user_delete', { scimUserId: row.id, memberId: row.userId, userName: row.userName, accountDisabled });
    });
  }

  private async changeUser(ctx: ScimContext, id: string, next: (current: ScimUserResource) => ScimUserInput): Promise<ScimUserResource> {
    try {
      const row = await this.uow.run(async (tx) => {
        await this.organizations.lockForChange(tx, ctx.organizationId);
        const row = await this.directory.findUser(ctx.organizationId, id, tx, true);
        if (!row) throw scimNotFound('User', id);
        const input = next(toScimUser(row, ctx.base));
        if (input.userName !== row.userName.toLowerCase()) {
          throw mutability(400, `userName is the account’s address and cannot change here (from ${row.userName} to ${input.userName}): deprovision the person and provision the new address.`);
        }
        await this.checkUnique(tx, ctx, input, row.id);
        const now = this.clock.now();
        const fieldsChanged = input.externalId !== row.externalId || input.givenName !== row.givenName || input.familyName !== row.familyName || input.displayName !== row.displayName;
        if (fieldsChanged) {
          await this.directory.updateUser(tx, row.id, input, now);
          await this.record(tx, ctx, 'scim.user_update', { scimUserId: row.id, memberId: row.userId, userName: row.userName, externalId: input.externalId });
        }
        if (input.active !== row.active) {
          if (input.active) {
            const { role, accountEnabled } = await this.reactivate(tx, ctx, row);
            await this.record(tx, ctx, 'scim.user_reactivate', { scimUserId: row.id, memberId: row.userId, userName: row.userName, role, accountEnabled });
          } else {
            const accountDisabledAt = await this.leave(tx, ctx, row);
            await this.directory.setActive(tx, row.id, false, accountDisabledAt, now);
            await this.record(tx, ctx, 'scim.user_deactivate', { scimUserId: row.id, memberId: row.userId, userName: row.userName, accountDisabled: accountDisabledAt !== null });
          }
        }
        return (await this.directory.findUser(ctx.organizationId, row.id, tx))!;
      });
      return toScimUser(row, ctx.base);
    } catch (err) {
      if (isUniqueViolation(err)) throw uniqueness('Another person of this organization has that externalId.');
      throw err;
    }
  }

  /**
   * Makes an active person a member with their mapped role, `member` when the organization maps no
   * group; a member already keeps their role unless the mapping gives one (an owner stays an owner). The role.
   */
  private async join(tx: Tx, ctx: ScimContext, row: ScimUserRow): Promise<string> {
    const mapped = await this.directory.mappedRole(tx, ctx.organizationId, row.id);
    const added = await this.organizations.addMember(tx, ctx.organizationId, row.userId, mapped ?? 'member', VIA, null);
    if (!added && mapped) await this.organizations.setRoleFor(tx, ctx.organizationId, row.userId, mapped, VIA);
    return (await this.organizations.roleIn(tx, ctx.organizationId, row.userId)) ?? mapped ?? 'member';
  }

  /**
   * Reactivation (the address still in the organization's verified domains, else 400
   * `invalidValue`): the membership back, and the account enabled again when a deactivation of this
   * organization disabled it and that disable is still the account's (an instance administrator
   * who enabled it and disabled it again since is not undone: their disable has another time).
   */
  private async reactivate(tx: Tx, ctx: ScimContext, row: ScimUserRow): Promise<{ role: string; accountEnabled: boolean }> {
    // As a creation: the address must be in the organization's verified domains now (one it removed,
    // perhaps verified by another organization since, no longer lets its directory bring anyone in).
    await this.checkDomain(tx, ctx, row.userName);
    const disabledAt = row.accountDisabledAt && (await this.users.findById(row.userId, tx))?.disabledAt;
    const ours = !!disabledAt && disabledAt.getTime() === row.accountDisabledAt!.getTime();
    const accountEnabled = ours && (await this.users.setDisabled(tx, row.userId, false, this.clock.now(), null, null));
    await this.directory.setActive(tx, row.id, true, null, this.clock.now());
    return { role: await this.join(tx, ctx, row), accountEnabled };
  }

  /**
   * Ends the person's membership (refused for the last owner: 409 `mutability`; for an owner when
   * the token's maker is not one: 403), and with
   * `deactivateDisablesAccount` disables the account of a person who is now in no organization,
   * whose address is in this one's verified domains and who is not an administrator of the
   * instance; when it disabled the account (the account's `disabled_at`), else null.
   */
  private async leave(tx: Tx, ctx: ScimContext, row: ScimUserRow): Promise<Date | null> {
    // A token acts with its maker's standing: an admin never removes an owner (organizations.md), so
    // neither does an admin's token, by linking the owner's account first and deactivating it.
    if ((await this.organizations.roleIn(tx, ctx.organizationId, row.userId)) === 'owner' && (await this.organizations.roleIn(tx, ctx.organizationId, ctx.makerId)) !== 'owner') {
      throw new ScimError(403, undefined, `${row.userName} is an owner of “${ctx.name}”: only a SCIM token made by an owner may remove an owner.`);
    }
    const removed = await this.organizations.removeMemberFor(tx, ctx.organizationId, row.userId, VIA);
    if (removed === 'last-owner') {
      throw mutability(409, `${row.userName} is the last owner of “${ctx.name}”: an owner of the organization must name another owner before the directory can remove them.`);
    }
    if (!(await this.settings.deactivateDisablesAccount(ctx.organizationId, tx))) return null;
    const account = await this.users.findById(row.userId, tx);
    if (!account || account.disabledAt || account.role === 'admin' || !account.email) return null;
    if (await this.directory.isMemberAnywhere(tx, row.userId)) return null;
    const domain = account.email.split('@')[1]!.toLowerCase();
    if (!(await this.organizations.verifiedDomains(ctx.organizationId, tx)).includes(domain)) return null;
    const now = this.clock.now();
    if (!(await this.users.setDisabled(tx, row.userId, true, now, null, null))) return null;
    const { othersTokens } = await this.tokens.revokeEverythingOfUserIn(tx, row.userId, now, null);
    await this.webSessions.endAllFor(row.userId, tx);
    this.uow.afterCommit(tx, () => {
      this.revocations.userRevoked(row.userId);
      this.revocations.tokensRevoked(othersTokens);
    });
    return now;
  }

  private async user(ctx: ScimContext, id: string): Promise<ScimUserRow> {
    const row = await this.directory.findUser(ctx.organizationId, id);
    if (!row) throw scimNotFound('User', id);
    return row;
  }

  /**
   * userName must be an address of a domain the organization has verified, read under its lock, in
   * `tx` (a second connection, asked for while holding the organization's lock, would wait on a pool
   * that every request queued behind that lock holds: 503s under a burst). @throws 400 invalidValue
   */
  private async checkDomain(tx: Tx, ctx: ScimContext, userName: string): Promise<void> {
    const domain = userName.split('@')[1]!;
    if (!(await this.organizations.verifiedDomains(ctx.organizationId, tx)).includes(domain)) {
      throw invalidValue(`${userName} is not in a domain “${ctx.name}” has verified: verify ${domain} on the organization’s Domains page first.`);
    }
  }

  private async checkUnique(tx: Tx, ctx: ScimContext, input: ScimUserInput, exceptId: string | null): Promise<void> {
    const clash = await this.directory.clash(tx, ctx.organizationId, input.userName, input.externalId, exceptId);
    if (clash === 'userName') throw uniqueness(`${input.userName} is provisioned already.`);
    if (clash === 'externalId') throw uniqueness(`Another person of this organization has the externalId ${input.externalId}.`);
  }

  // Groups

  async createGroup(ctx: ScimContext, body: unknown): Promise<ScimGroupResource> {
    const input = groupInput(body);
    const group = await this.uow.run(async (tx) => {
      await this.organizations.lockForChange(tx, ctx.organizationId);
      const group = await this.directory.insertGroup(tx, ctx.organizationId, input.displayName, input.externalId, this.clock.now());
      if (!group) throw uniqueness(`A group named ${input.displayName} exists already.`);
      const { added } = await this.setMembers(tx, ctx, group, input.members ?? []);
      const role = (await this.directory.groupRoles(ctx.organizationId, tx)).find((m) => m.group.toLowerCase() === group.displayName.toLowerCase())?.role ?? null;
      await this.record(tx, ctx, 'scim.group_create', { groupId: group.id, displayName: group.displayName, role, added });
      return group;
    });
    return this.groupResource(ctx, group);
  }

  async getGroup(ctx: ScimContext, id: string, withMembers: boolean): Promise<ScimGroupResource> {
    const group = await this.directory.findGroup(ctx.organizationId, id);
    if (!group) throw scimNotFound('Group', id);
    return this.groupResource(ctx, group, withMembers);
  }

  async listGroups(ctx: ScimContext, query: ListQuery, withMembers: boolean) {
    const { rows, total } = await this.directory.listGroups(ctx.organizationId, query);
    const members = withMembers ? await this.directory.membersOf(rows.map((g) => g.id)) : [];
    return listResponse(rows.map((g) => toScimGroup(g, withMembers ? members.filter((m) => m.groupId === g.id) : undefined, ctx.base)), total, query);
  }

  async replaceGroup(ctx: ScimContext, id: string, body: unknown): Promise<ScimGroupResource> {
    const input = groupInput(body);
    return this.changeGroup(ctx, id, () => ({ ...input, members: input.members ?? [] }));
  }

  /** PATCH: members added and removed (`{"op":"add","path":"members","value":[{"value":id}]}`, `{"op":"remove","path":"members[value eq \"id\"]"}`), a new displayName. */
  async patchGroup(ctx: ScimContext, id: string, body: unknown): Promise<ScimGroupResource> {
    const operations = patchOperations(body);
    return this.changeGroup(ctx, id, (current) => {
      const input = groupInput(applyPatch(current, operations));
      return { ...input, members: input.members ?? [] };
    });
  }

  async deleteGroup(ctx: ScimContext, id: string): Promise<void> {
    await this.uow.run(async (tx) => {
      await this.organizations.lockForChange(tx, ctx.organizationId);
      const group = await this.directory.findGroup(ctx.organizationId, id, tx, true);
      if (!group) throw scimNotFound('Group', id);
      const { removed } = await this.setMembers(tx, ctx, group, []);
      await this.directory.deleteGroup(tx, group.id);
      await this.record(tx, ctx, 'scim.group_delete', { groupId: group.id, displayName: group.displayName, removed });
    });
  }

  /**
   * Gives every active provisioned person of the organization the role the mapping gives them now,
   * in `tx` after the organization's lock (the admins changed the mapping). An empty mapping changes
   * nobody's role: the roles stay as they are, the admins' to change from now on.
   */
  async applyMapping(tx: Tx, organizationId: string): Promise<void> {
    for (const row of await this.directory.usersOf(tx, organizationId)) await this.followMapping(tx, organizationId, row);
  }

  /** The person's role as the mapping says now (nothing when the organization maps no group). */
  private async followMapping(tx: Tx, organizationId: string, row: ScimUserRow): Promise<void> {
    const mapped = await this.directory.mappedRole(tx, organizationId, row.id);
    if (mapped) await this.organizations.setRoleFor(tx, organizationId, row.userId, mapped, VIA);
  }

  private async changeGroup(ctx: ScimContext, id: string, next: (current: ScimGroupResource) => { displayName: string; externalId: string | null; members: string[] }): Promise<ScimGroupResource> {
    const group = await this.uow.run(async (tx) => {
      await this.organizations.lockForChange(tx, ctx.organizationId);
      const group = await this.directory.findGroup(ctx.organizationId, id, tx, true);
      if (!group) throw scimNotFound('Group', id);
      const input = next(toScimGroup(group, await this.directory.membersOf([group.id], tx), ctx.base));
      const renamed = input.displayName !== group.displayName || input.externalId !== group.externalId;
      if (renamed && !(await this.directory.updateGroup(tx, group.id, input.displayName, input.externalId, this.clock.now()))) {
        throw uniqueness(`A group named ${input.displayName} exists already.`);
      }
      const { added, removed } = await this.setMembers(tx, ctx, { ...group, displayName: input.displayName }, input.members);
      if (renamed || added || removed) await this.record(tx, ctx, 'scim.group_update', { groupId: group.id, displayName: input.displayName, added, removed });
      return (await this.directory.findGroup(ctx.organizationId, group.id, tx))!;
    });
    return this.groupResource(ctx, group);
  }

  /**
   * Makes the group's members exactly `scimUserIds` (the organization's provisioned people: another
   * id is 400 invalidValue), then gives each person whose groups changed the role the mapping gives them.
   */
  private async setMembers(tx: Tx, ctx: ScimContext, group: ScimGroupRow, scimUserIds: readonly string[]): Promise<{ added: number; removed: number }> {
    const wanted = [...new Set(scimUserIds)];
    const known = await this.directory.existingUsers(tx, ctx.organizationId, wanted.filter((id) => /^[0-9a-f-]{36}$/i.test(id)));
    if (known.length !== wanted.length) {
      const unknown = wanted.find((id) => !known.some((k) => k.id === id.toLowerCase()));
      throw invalidValue(`No User with the id ${unknown} in this organization: provision people before adding them to a group.`);
    }
    const current = (await this.directory.membersOf([group.id], tx)).map((m) => m.scimUserId);
    const toAdd = known.filter((k) => !current.includes(k.id)).map((k) => k.id);
    const toRemove = current.filter((id) => !known.some((k) => k.id === id));
    const added = await this.directory.addMembers(tx, group.id, toAdd);
    const removed = await this.directory.removeMembers(tx, group.id, toRemove);
    for (const scimUserId of [...toAdd, ...toRemove]) {
      const person = known.find((k) => k.id === scimUserId) ?? (await this.directory.findUser(ctx.organizationId, scimUserId, tx));
      if (person?.active) await this.followMapping(tx, ctx.organizationId, person);
    }
    return { added, removed };
  }

  private async groupResource(ctx: ScimContext, group: ScimGroupRow, withMembers = true): Promise<ScimGroupResource> {
    return toScimGroup(group, withMembers ? await this.directory.membersOf([group.id]) : undefined, ctx.base);
  }

  /** Records `type` in the organization's log, by nobody (the directory), with the token that made the request. */
  private record(tx: Tx, ctx: ScimContext, type: AuthEventType, detail: Record<string, string | number | boolean | null>): Promise<void> {
    return this.audit.record(type, { organizationId: ctx.organizationId, detail: { ...detail, tokenId: ctx.tokenId } }, tx);
  }
}

/** A list's answer (RFC 7644 §3.4.2). */
function listResponse<T>(resources: T[], total: number, query: ListQuery) {
  return { schemas: [SCHEMAS.list], totalResults: total, startIndex: query.offset + 1, itemsPerPage: resources.length, Resources: resources };
}

/** A PatchOp body's operations, checked by scim-patch. @throws ScimError 400 */
function patchOperations(body: unknown): ScimPatchOperation[] {
  // Okta and Entra write ops in any case ("Replace", "Add"); scim-patch reads a few of them only.
  const operations = (body as { Operations?: unknown } | null)?.Operations;
  const normalized = Array.isArray(operations)
    ? { ...(body as object), Operations: operations.map((op: unknown) => (op && typeof op === 'object' && typeof (op as { op?: unknown }).op === 'string' ? { ...op, op: (op as { op: string }).op.toLowerCase() } : op)) }
    : body;
  try {
    patchBodyValidation(normalized as Parameters<typeof patchBodyValidation>[0]);
  } catch (err) {
    throw invalidSyntax(`The body must be a SCIM PatchOp (${SCHEMAS.patch}) with its Operations: ${(err as Error).message}`);
  }
  const checked = (normalized as { Operations: ScimPatchOperation[] }).Operations;
  for (const operation of checked) refuseInheritedNames(operation);
  return checked;
}

/** The names every object inherits (`__proto__`, `constructor`, `toString`…), and `prototype`. */
const INHERITED = new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype']);

/**
 * Refuses an operation whose path, or a key of whose value (at any depth, dotted keys included),
 * names what every object inherits. scim-patch 0.8.3 (the registry's latest) walks such names onto
 * the server's own Object.prototype, process-wide (GHSA-9m6g-wc8r-q59c, GHSA-2mhw-wcx5-v3xj, fixed
 * upstream in thomaspoignant/scim-patch#1112 and #1127 but not released). No attribute of a User or
 * Group is called so. @throws ScimError 400 invalidPath
 */
function refuseInheritedNames(operation: ScimPatchOperation): void {
  const names = (text: string) => text.match(/[A-Za-z_$][\w$]*/g) ?? [];
  const refuse = (name: string) => {
    throw new ScimError(400, 'invalidPath', `The patch names “${name}”, which is no attribute of this resource.`);
  };
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    for (const key of Object.keys(value)) {
      const found = names(key).find((n) => INHERITED.has(n));
      if (found) refuse(found);
      visit((value as Record<string, unknown>)[key]);
    }
  };
  const path = (operation as { path?: unknown }).path;
  const inPath = typeof path === 'string' ? names(path).find((n) => INHERITED.has(n)) : undefined;
  if (inPath) refuse(inPath);
  visit((operation as { value?: unknown }).value);
}

/** The resource as the operations leave it (scim-patch). @throws ScimError 400 with scim-patch's scimType */
function applyPatch<T extends ScimUserResource | ScimGroupResource>(resource: T, operations: ScimPatchOperation[]): T {
  try {
    return scimPatch(structuredClone(resource), operations, { mutateDocument: true, treatMissingAsAdd: true });
  } catch (err) {
    const scimType = (err as { scimCode?: string }).scimCode as ScimType | undefined;
    throw new ScimError(400, scimType ?? 'invalidValue', `The patch cannot be applied: ${(err as Error).message}`);
  }
}
