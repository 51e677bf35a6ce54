import { Controller, Get, Param, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CreateInvitationRequestSchema, ORG_INVITATION_DAYS, ORG_ROLES, type OrgRole, utcMinute } from '@prospect/contract';
import { ApiException } from '../../common/api-exception.js';
import { Public } from '../../auth/public.decorator.js';
import { OrganizationInvitationsService } from '../../organizations/organization-invitations.service.js';
import { ORG_PAGE_PREFIX, type OrgActor } from '../../organizations/organizations.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { field, queryParam } from '../form.js';
import { accountOf, CsrfGuard, PageRefusalFilter, SignedInGuard } from '../page-guards.js';
import { OrgAdminPages, orgTabs } from './org-admin-pages.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * An organization's invitations page (issue #44), for its admins and owners: the open invitations
 * with a Revoke button each, and the form that invites an address with a role (an owner's role is
 * offered to owners only). Read and checked at each request, as the API's routes are: a member
 * gets a 403 page naming the role needed, anyone else a 404 page, as if it did not exist.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
@Controller(`${ORG_PAGE_PREFIX.slice(1)}/:slug/invitations`)
export class OrgInvitationsPageController {
  constructor(
    private readonly adminPages: OrgAdminPages,
    private readonly invitations: OrganizationInvitationsService,
    private readonly csrf: CsrfService,
  ) {}

  @Get()
  async list(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its invitations');
    if (!actor) return;
    const invited = queryParam(req, 'invited');
    const revoked = queryParam(req, 'revoked');
    await this.render(req, res, actor, 200, { invited: invited || undefined, revoked: revoked || undefined });
  }

  @Post()
  @UseGuards(CsrfGuard)
  async invite(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its invitations');
    if (!actor) return;
    const parsed = CreateInvitationRequestSchema.safeParse({ email: field(req, 'email'), role: field(req, 'role') });
    if (!parsed.success) return this.render(req, res, actor, 400, { error: 'Please enter an e-mail address and choose a role.' });
    try {
      const invitation = await this.invitations.create(actor, parsed.data);
      res.redirect(303, `${this.pathOf(actor)}?invited=${encodeURIComponent(invitation.email)}`);
    } catch (err) {
      if (!(err instanceof ApiException)) throw err;
      if (err.headers['Retry-After']) res.set('Retry-After', err.headers['Retry-After']);
      return this.render(req, res, actor, err.getStatus(), { error: err.message });
    }
  }

  @Post(':id/revoke')
  @UseGuards(CsrfGuard)
  async revoke(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id') id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its invitations');
    if (!actor) return;
    if (!UUID.test(id)) return this.render(req, res, actor, 404, { error: 'No such open invitation.' });
    try {
      await this.invitations.revoke(actor, id);
      res.redirect(303, `${this.pathOf(actor)}?revoked=1`);
    } catch (err) {
      if (!(err instanceof ApiException)) throw err;
      return this.render(req, res, actor, err.getStatus(), { error: err.message });
    }
  }


  private pathOf(actor: OrgActor) {
    return `${ORG_PAGE_PREFIX}/${actor.organization.slug}/invitations`;
  }

  private async render(req: Request, res: Response, actor: OrgActor, status: number, shown: { error?: string; invited?: string; revoked?: string }) {
    const open = await this.invitations.list(actor.organization.id);
    const mayName = (role: OrgRole) => role !== 'owner' || actor.organization.role === 'owner';
    const chosen = field(req, 'role') || 'member';
    res.status(status).render('org-invitations', {
      title: `Invitations · ${actor.organization.name}`,
      wide: true,
      onOrgs: true,
      orgTab: orgTabs(actor.organization.slug, 'invitations'),
      account: accountOf(req, this.csrf),
      organization: actor.organization,
      back: `${ORG_PAGE_PREFIX}/${actor.organization.slug}`,
      action: this.pathOf(actor),
      invitations: open.map((i) => ({ ...i, expiresAt: utcMinute(i.expiresAt) })),
      roles: ORG_ROLES.filter(mayName).map((role) => ({ role, selected: role === chosen })),
      email: status === 200 ? '' : field(req, 'email').trim(),
      days: ORG_INVITATION_DAYS,
      ...shown,
    });
  }
}
