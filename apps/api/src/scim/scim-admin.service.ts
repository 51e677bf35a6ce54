import { Injectable } from '@nestjs/common';
import { type CreatedScimToken, MAX_SCIM_TOKENS, roleAtLeast, SCIM_TOKEN_PREFIX, type ScimRequestLogEntry, type ScimSettings, type ScimToken, type UpdateScimSettingsRequest } from '@prospect/contract';
import { conflict, notFound } from '../common/api-exception.js';
import { Clock } from '../common/clock.js';
import { generateSecret, looksLikeSecret, sha256 } from '../common/secrets.js';
import { AppConfig } from '../config/app-config.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';
import { needsRole, type OrgActor, OrganizationsService } from '../organizations/organizations.service.js';
import { RateLimits } from '../rate-limits/rate-limits.js';
import { ScimDirectoryRepository } from './scim-directory.repository.js';
import { ScimError } from './scim-error.js';
import { ScimProvisioningService } from './scim-provisioning.service.js';
import { ScimSettingsRepository } from './scim-settings.repository.js';
import { type ScimTokenOwner, ScimTokensRepository } from './scim-tokens.repository.js';

/** Where an organization's SCIM service is, under PUBLIC_URL. */
export const scimPath = (slug: string) => `/scim/v2/${slug}`;

const UNAUTHORIZED = { 'WWW-Authenticate': 'Bearer realm="Prospect SCIM"' };

/**
 * What an organization's admins set for its directory (issue #47): the SCIM tokens (shown once,
 * only their SHA-256 kept), the group→role mapping, `deactivateDisablesAccount`, and the
 * provisioning log; and the check of a token at each SCIM request. Every change runs under the
 * organization's lock with the actor's role read again there, as OrganizationsService's do.
 */
@Injectable()
export class ScimAdminService {
  constructor(
    private readonly tokens: ScimTokensRepository,
    private readonly settings: ScimSettingsRepository,
    private readonly directory: ScimDirectoryRepository,
    private readonly provisioning: ScimProvisioningService,
    private readonly organizations: OrganizationsService,
    private readonly limits: RateLimits,
    private readonly uow: UnitOfWork,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  /** A new token, returned this once. @throws 409 past MAX_SCIM_TOKENS */
  async createToken(actor: OrgActor, label: string | undefined): Promise<CreatedScimToken> {
    const token = generateSecret(SCIM_TOKEN_PREFIX);
    const row = await this.asAdmin(actor, 'make SCIM tokens', async (tx, actor) => {
      if ((await this.tokens.count(tx, actor.organization.id)) >= MAX_SCIM_TOKENS) {
        throw conflict(`“${actor.organization.name}” has ${MAX_SCIM_TOKENS} SCIM tokens, the most it may have: revoke one first.`);
      }
      const row = await this.tokens.insert(tx, actor.organization.id, sha256(token), label ?? 'SCIM token', actor.userId, this.clock.now());
      await this.organizations.record(tx, actor, 'scim.token_create', { tokenId: row.id, label: row.label });
      return row;
    });
    return { id: row.id, label: row.label, token, createdAt: row.createdAt.toISOString() };
  }

  async listTokens(actor: OrgActor): Promise<ScimToken[]> {
    return (await this.tokens.list(actor.organization.id)).map((t) => ({
      id: t.id,
      label: t.label,
      createdAt: t.createdAt.toISOString(),
      createdBy: t.createdBy,
      lastUsedAt: t.lastUsedAt?.toISOString() ?? null,
    }));
  }

  /** Revokes a token: the directory's next request with it is refused. @throws 404 */
  async revokeToken(actor: OrgActor, id: string): Promise<void> {
    await this.asAdmin(actor, 'revoke SCIM tokens', async (tx, actor) => {
      const gone = await this.tokens.delete(tx, actor.organization.id, id);
      if (!gone) throw notFound(`No SCIM token with the id ${id} in “${actor.organization.name}”.`);
      await this.organizations.record(tx, actor, 'scim.token_revoke', { tokenId: id, label: gone.label });
    });
  }

  async getSettings(actor: OrgActor): Promise<ScimSettings> {
    return {
      endpoint: `${this.config.publicUrl}${scimPath(actor.organization.slug)}`,
      deactivateDisablesAccount: await this.settings.deactivateDisablesAccount(actor.organization.id),
      groupRoles: await this.directory.groupRoles(actor.organization.id),
    };
  }

  /** Changes the settings; a new mapping gives every provisioned person the role it maps them to now, in the same transaction. */
  async updateSettings(actor: OrgActor, changes: UpdateScimSettingsRequest): Promise<ScimSettings> {
    await this.asAdmin(actor, 'change SCIM provisioning', async (tx, actor) => {
      const orgId = actor.organization.id;
      const detail: Record<string, string | boolean> = {};
      if (changes.deactivateDisablesAccount !== undefined) {
        await this.settings.setDeactivateDisablesAccount(tx, orgId, changes.deactivateDisablesAccount, this.clock.now());
        detail.deactivateDisablesAccount = changes.deactivateDisablesAccount;
      }
      if (changes.groupRoles) {
        const names = changes.groupRoles.map((m) => m.group.toLowerCase());
        if (new Set(names).size !== names.length) throw conflict('Each group may be mapped to one role only.');
        await this.directory.replaceGroupRoles(tx, orgId, changes.groupRoles);
        await this.provisioning.applyMapping(tx, orgId);
        detail.groupRoles = changes.groupRoles.map((m) => `${m.group} → ${m.role}`).join(', ') || 'none';
      }
      await this.organizations.record(tx, actor, 'scim.settings_update', detail);
    });
    return this.getSettings(actor);
  }

  /** The provisioning log: the directory's last requests, newest first. */
  async log(actor: OrgActor, limit = 50): Promise<ScimRequestLogEntry[]> {
    return (await this.settings.requests(actor.organization.id, limit)).map((r) => ({ ...r, at: r.at.toISOString() }));
  }

  /**
   * The organization of `slug` when `authorization` carries one of its working tokens. Counted
   * against the address at this organization before the token is looked up (a working one gives its point back).
   * @throws 429 past the limit; 401 (SCIM's error body) for anything else, the same for every reason.
   */
  async authenticate(slug: string, authorization: string | undefined, ip: string): Promise<ScimTokenOwner> {
    await this.limits.attemptScimToken(slug, ip);
    const token = /^Bearer +(\S+)$/i.exec(authorization ?? '')?.[1] ?? '';
    const owner = looksLikeSecret(token, SCIM_TOKEN_PREFIX) ? await this.tokens.use(sha256(token), slug, this.clock.now()) : undefined;
    if (!owner) throw new ScimError(401, undefined, 'A valid SCIM token of this organization is required (Authorization: Bearer prscim_…), made on the organization’s SCIM page.', UNAUTHORIZED);
    await this.limits.scimTokenSucceeded(slug, ip);
    return owner;
  }

  /** Records one request in the provisioning log (after its answer; a failure to record is the caller's to log). */
  logRequest(organizationId: string, entry: { method: string; resource: string; status: number; outcome: string }): Promise<void> {
    return this.settings.logRequest(organizationId, { ...entry, at: this.clock.now() });
  }

  private async asAdmin<T>(actor: OrgActor, what: string, work: (tx: Tx, actor: OrgActor) => Promise<T>): Promise<T> {
    return this.uow.run(async (tx) => {
      await this.organizations.lockForChange(tx, actor.organization.id);
      const role = await this.organizations.roleIn(tx, actor.organization.id, actor.userId);
      if (!role) throw notFound('This organization no longer exists, or you are no longer a member.');
      const current = { ...actor, organization: { ...actor.organization, role } };
      if (!roleAtLeast(role, 'admin')) needsRole('admin', current, what);
      return work(tx, current);
    });
  }
}
