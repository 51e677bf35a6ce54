import { Controller, Get, Param, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import {
  type AdminIdentityProvider,
  type IdentityProviderConnectionTest,
  type Organization,
  roleAtLeast,
  type UpdateIdentityProviderRequest,
} from '@prospect/contract';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { ApiException } from '../../common/api-exception.js';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { DEFAULT_SCOPES, IdentityProvidersService, type ProviderOwner } from '../../federation/identity-providers.service.js';
import { OrganizationsService } from '../../organizations/organizations.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { field, queryParam } from '../form.js';
import { createRequestOf, presetOptions, problemOf, type ProviderForm, providerRow, readProviderForm, updateRequestOf } from '../identity-provider-form.js';
import { accountOf, browserInSudoMode, CsrfGuard, PageRefusalFilter, SignedInGuard, SudoRequired } from '../page-guards.js';
import { OrgAdminPages, orgTabs } from './org-admin-pages.js';

const DONE: Record<string, string> = {
  updated: 'Saved.',
  disabled: 'Disabled: its sign-ins are refused, and every browser session it started has ended.',
  enabled: 'Enabled: people of its domains can sign in with it again.',
};

/**
 * /orgs/{slug}/identity-providers (issue #44): the organization's admins and owners register the
 * organization's own OpenID providers for its verified domains, test their connection (discovery
 * read now, its answer shown), change, disable or delete them. The service of the JSON API
 * (`/api/orgs/{slug}/identity-providers`); every change in sudo mode, as on the instance's
 * /admin/identity-providers, whose form this one follows.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
// Mounted at `orgs` (not the full path): a refused form's way back (page-guards.ts pageOf) is then
// a real page, /orgs, rather than a path with `:slug` in it.
@Controller('orgs')
export class OrgIdentityProvidersPageController {
  constructor(
    private readonly providers: IdentityProvidersService,
    private readonly organizations: OrganizationsService,
    private readonly adminPages: OrgAdminPages,
    private readonly csrf: CsrfService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  @Get(':slug/identity-providers')
  async list(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const org = await this.adminOf(req, res, slug);
    if (org) await this.render(req, res, org, 200, {});
  }

  @Post(':slug/identity-providers')
  @UseGuards(CsrfGuard)
  async create(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const org = await this.adminOf(req, res, slug, true);
    if (!org) return;
    // No `enforce` box: an organization enforces by its verified domains.
    const typed = readProviderForm(req, false);
    const input = createRequestOf(req, typed);
    if (!input.success) return this.render(req, res, org, 400, { error: problemOf(input.error), typed });
    try {
      await this.providers.create(input.data, req.webUser!.id, req.ip ?? null, ownerOf(org));
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() < 500) return this.render(req, res, org, err.getStatus(), { error: err.message, typed });
      throw err;
    }
    res.redirect(303, `${pageOf(org)}?created=${encodeURIComponent(input.data.id)}`);
  }

  /** The edit form of one provider: its settings, and a new client secret if one is typed. */
  @Post(':slug/identity-providers/:id')
  @UseGuards(CsrfGuard)
  async update(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string) {
    const org = await this.adminOf(req, res, slug, true);
    if (!org) return;
    const input = updateRequestOf(req, false);
    if (!input.success) return this.render(req, res, org, 400, { error: problemOf(input.error) });
    return this.act(req, res, org, id, 'updated', input.data);
  }

  @Post(':slug/identity-providers/:id/disable')
  @UseGuards(CsrfGuard)
  async disable(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string) {
    const org = await this.adminOf(req, res, slug, true);
    if (org) await this.act(req, res, org, id, 'disabled', { disabled: true });
  }

  @Post(':slug/identity-providers/:id/enable')
  @UseGuards(CsrfGuard)
  async enable(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string) {
    const org = await this.adminOf(req, res, slug, true);
    if (org) await this.act(req, res, org, id, 'enabled', { disabled: false });
  }

  /** "Test connection": discovery now, its answer shown beside the provider. Reads only: no sudo mode asked. */
  @Post(':slug/identity-providers/:id/test')
  @UseGuards(CsrfGuard)
  async test(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string) {
    const org = await this.adminOf(req, res, slug);
    if (!org) return;
    try {
      const answer = await this.providers.testConnection(id, ownerOf(org));
      await this.render(req, res, org, 200, { tested: { id, answer } });
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() < 500) return this.render(req, res, org, err.getStatus(), { error: err.message });
      throw err;
    }
  }

  @Post(':slug/identity-providers/:id/delete')
  @UseGuards(CsrfGuard)
  async remove(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string) {
    const org = await this.adminOf(req, res, slug, true);
    if (!org) return;
    if (field(req, 'confirm') !== id) return this.render(req, res, org, 400, { error: `To delete it, type its id (${id}) in the box beside the button.` });
    try {
      await this.providers.remove(id, req.webUser!.id, req.ip ?? null, ownerOf(org));
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() < 500) return this.render(req, res, org, err.getStatus(), { error: err.message });
      throw err;
    }
    res.redirect(303, `${pageOf(org)}?deleted=${encodeURIComponent(id)}`);
  }

  /**
   * The organization of `slug` when the signed-in person is its admin or owner, read now; else the
   * refusal is rendered (a member: 403 saying who may; anyone else: 404) and undefined answered. A
   * change (`change`) asks for sudo mode, and comes back to this page after it.
   */
  private async adminOf(req: Request, res: Response, slug: string, change = false): Promise<Organization | undefined> {
    const org = await this.adminPages.memberOf(req, slug);
    if (!org || !roleAtLeast(org.role, 'admin')) {
      const heading = org ? 'Admins only' : 'No such organization';
      const message = org ? `Only an admin or an owner of “${org.name}” may manage its identity providers; you are a member.` : `You are not a member of an organization “${slug}”.`;
      res.status(org ? 403 : 404).render('error', { title: heading, heading, message, account: accountOf(req, this.csrf) });
      return undefined;
    }
    if (change && !browserInSudoMode(req, this.clock, this.config)) throw new SudoRequired(pageOf(org));
    return org;
  }

  private async act(req: Request, res: Response, org: Organization, id: string, done: string, changes: UpdateIdentityProviderRequest) {
    try {
      await this.providers.update(id, changes, req.webUser!.id, req.ip ?? null, ownerOf(org));
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() < 500) return this.render(req, res, org, err.getStatus(), { error: err.message });
      throw err;
    }
    res.redirect(303, `${pageOf(org)}?done=${done}#${encodeURIComponent(id)}`);
  }

  private async render(
    req: Request,
    res: Response,
    org: Organization,
    status: number,
    notice: { error?: string; typed?: ProviderForm; tested?: { id: string; answer: IdentityProviderConnectionTest } },
  ) {
    const [all, verifiedDomains] = await Promise.all([this.providers.list(ownerOf(org)), this.organizations.verifiedDomains(org.id)]);
    const created = queryParam(req, 'created');
    res.status(status).render('org-identity-providers', {
      title: `Identity providers · ${org.name}`,
      wide: true,
      onOrgs: true,
      orgTab: orgTabs(org.slug, 'identityProviders'),
      account: accountOf(req, this.csrf),
      org,
      base: pageOf(org),
      verifiedDomains,
      providers: all.map((p: AdminIdentityProvider) => ({
        ...providerRow(p),
        signInUrl: `${this.config.publicUrl}/login/sso/${p.id}`,
        tested: notice.tested?.id === p.id ? notice.tested.answer : undefined,
      })),
      created: created ? all.find((p) => p.id === created) : undefined,
      deleted: queryParam(req, 'deleted') || undefined,
      done: DONE[queryParam(req, 'done')],
      typed: notice.typed ?? { preset: 'generic' },
      defaultScopes: DEFAULT_SCOPES.join(' '),
      presets: presetOptions(notice.typed),
      callbackPattern: `${this.config.publicUrl}/login/sso/{id}/callback`,
      error: notice.error,
    });
  }
}

const ownerOf = (org: Organization): ProviderOwner => ({ organizationId: org.id });
const pageOf = (org: Organization) => `/orgs/${encodeURIComponent(org.slug)}/identity-providers`;
