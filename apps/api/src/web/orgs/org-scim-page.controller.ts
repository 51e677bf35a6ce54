import { Controller, Get, Param, ParseUUIDPipe, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { type CreatedScimToken, CreateScimTokenRequestSchema, SCIM_GROUP_ROLES, type ScimGroupRoleMapping, UpdateScimSettingsRequestSchema, utcMinute } from '@prospect/contract';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { ApiException } from '../../common/api-exception.js';
import { ORG_PAGE_PREFIX, type OrgActor } from '../../organizations/organizations.service.js';
import { ScimAdminService } from '../../scim/scim-admin.service.js';
import { field, queryParam } from '../form.js';
import { CsrfGuard, PageRefusalFilter, SignedInGuard } from '../page-guards.js';
import { changeThenRedirect, OrgAdminPages, orgPagePath } from './org-admin-pages.js';

const uuid = new ParseUUIDPipe();
const WHAT = 'its SCIM provisioning';

const DONE: Record<string, string> = {
  revoked: 'Revoked: the directory’s next request with it is refused.',
  saved: 'Saved.',
};

/** The mapping as the form's text: one `Group name = role` a line. */
const mappingText = (mapping: readonly ScimGroupRoleMapping[]) => mapping.map((m) => `${m.group} = ${m.role}`).join('\n');

/** The form's text as a mapping; undefined when a line is not `Group name = member|admin`. */
function parseMapping(text: string): ScimGroupRoleMapping[] | undefined {
  const mapping: ScimGroupRoleMapping[] = [];
  for (const line of text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean)) {
    const at = line.lastIndexOf('=');
    const group = line.slice(0, at).trim();
    const role = line.slice(at + 1).trim().toLowerCase();
    if (at < 1 || !group || !(SCIM_GROUP_ROLES as readonly string[]).includes(role)) return undefined;
    mapping.push({ group, role: role as ScimGroupRoleMapping['role'] });
  }
  return mapping;
}

/**
 * /orgs/{slug}/scim (issue #47): an organization's admins see the SCIM endpoint to give their
 * directory, make tokens (a new one is shown on the answer to its form, once, never stored by the
 * browser) and revoke them, set the group→role mapping and whether a deactivation disables the
 * account, and read the provisioning log. The same service as the API's routes.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
@Controller(`${ORG_PAGE_PREFIX.slice(1)}/:slug/scim`)
export class OrgScimPageController {
  constructor(
    private readonly adminPages: OrgAdminPages,
    private readonly scim: ScimAdminService,
  ) {}

  @Get()
  async page(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, WHAT);
    if (actor) await this.render(req, res, actor, 200, {});
  }

  @Post('tokens')
  @UseGuards(CsrfGuard)
  async createToken(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, WHAT);
    if (!actor) return;
    const input = CreateScimTokenRequestSchema.safeParse({ label: field(req, 'label') || undefined });
    if (!input.success) return this.render(req, res, actor, 400, { error: 'A label is up to 80 characters of text.' });
    let created: CreatedScimToken;
    try {
      created = await this.scim.createToken(actor, input.data.label);
    } catch (err) {
      if (err instanceof ApiException) return this.render(req, res, actor, err.getStatus(), { error: err.message });
      throw err;
    }
    // Shown in this answer only: a reload or a redirect would not show it again.
    res.setHeader('Cache-Control', 'no-store');
    await this.render(req, res, actor, 201, { newToken: created });
  }

  @Post('tokens/:id/revoke')
  @UseGuards(CsrfGuard)
  async revokeToken(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id', uuid) id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, WHAT);
    if (actor) await this.act(req, res, actor, 'revoked', () => this.scim.revokeToken(actor, id));
  }

  @Post('settings')
  @UseGuards(CsrfGuard)
  async saveSettings(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, WHAT);
    if (!actor) return;
    const groupRoles = parseMapping(field(req, 'groupRoles'));
    const input = groupRoles && UpdateScimSettingsRequestSchema.safeParse({ deactivateDisablesAccount: field(req, 'deactivateDisablesAccount') === 'on', groupRoles });
    if (!input?.success) return this.render(req, res, actor, 400, { error: 'Write one mapping a line, as “Group name = admin” or “Group name = member” (at most 50).' });
    await this.act(req, res, actor, 'saved', () => this.scim.updateSettings(actor, input.data));
  }

  private act(req: Request, res: Response, actor: OrgActor, done: string, work: () => Promise<unknown>) {
    return changeThenRedirect(res, orgPagePath(actor.organization.slug, `scim?done=${done}`), work, (status, error) => this.render(req, res, actor, status, { error }));
  }

  private async render(req: Request, res: Response, actor: OrgActor, status: number, shown: { error?: string; newToken?: CreatedScimToken }) {
    const [settings, tokens, log] = await Promise.all([this.scim.getSettings(actor), this.scim.listTokens(actor), this.scim.log(actor)]);
    const org = actor.organization;
    const when = (iso: string | null) => (iso ? utcMinute(iso) : null);
    res.status(status).render('org-scim', {
      title: `SCIM provisioning of ${org.name}`,
      ...this.adminPages.frame(req, org, 'scim'),
      endpoint: settings.endpoint,
      deactivateDisablesAccount: settings.deactivateDisablesAccount,
      groupRoles: mappingText(settings.groupRoles),
      tokens: tokens.map((t) => ({ ...t, createdAt: when(t.createdAt), lastUsedAt: when(t.lastUsedAt) })),
      newToken: shown.newToken,
      log: log.map((e) => ({ ...e, at: when(e.at), failed: e.status >= 400 })),
      done: shown.error ? undefined : DONE[queryParam(req, 'done')],
      error: shown.error,
    });
  }
}
