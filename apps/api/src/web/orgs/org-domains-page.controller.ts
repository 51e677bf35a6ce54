import { Controller, Get, Param, ParseUUIDPipe, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { AddDomainRequestSchema, JOIN_POLICIES, type JoinPolicy, UpdateDomainRequestSchema, utcMinute } from '@prospect/contract';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { OrganizationDomainsService } from '../../organizations/organization-domains.service.js';
import { ORG_PAGE_PREFIX, type OrgActor } from '../../organizations/organizations.service.js';
import { field, queryParam } from '../form.js';
import { CsrfGuard, PageRefusalFilter, SignedInGuard } from '../page-guards.js';
import { changeThenRedirect, OrgAdminPages, orgPagePath } from './org-admin-pages.js';

const uuid = new ParseUUIDPipe();

const POLICY_WORDS: Record<JoinPolicy, string> = {
  invite: 'By invitation only',
  request: 'People of the domain may ask to join; an admin approves',
  auto: 'People of the domain may join at once, as members',
};

const DONE: Record<string, string> = {
  added: 'Added. Publish its TXT record, then verify it.',
  verified: 'Verified.',
  saved: 'Saved.',
  removed: 'Removed.',
  approved: 'Approved: they are a member now.',
  declined: 'Declined.',
};

/**
 * /orgs/{slug}/domains (issue #44): an organization's admins add domains, see the TXT record each
 * needs (copyable), verify them, set who may join through them and whether their people sign in
 * only through the organization's identity provider, and remove them. The same service as
 * `/api/orgs/{slug}/domains`; a form's refusal shows its message on the page, with its status.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
@Controller(`${ORG_PAGE_PREFIX.slice(1)}/:slug/domains`)
export class OrgDomainsPageController {
  constructor(
    private readonly adminPages: OrgAdminPages,
    private readonly domains: OrganizationDomainsService,
  ) {}

  @Get()
  async page(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its domains');
    if (actor) await this.render(req, res, actor, 200, undefined);
  }

  @Post()
  @UseGuards(CsrfGuard)
  async add(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its domains');
    if (!actor) return;
    const input = AddDomainRequestSchema.safeParse({ domain: field(req, 'domain') });
    if (!input.success) return this.render(req, res, actor, 400, 'The domain must be a domain such as example.com.');
    await this.act(req, res, actor, 'added', input.data.domain, () => this.domains.add(actor, input.data.domain));
  }

  @Post(':domain/verify')
  @UseGuards(CsrfGuard)
  async verify(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('domain') domain: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its domains');
    if (actor) await this.act(req, res, actor, 'verified', domain, () => this.domains.verify(actor, domain));
  }

  @Post(':domain')
  @UseGuards(CsrfGuard)
  async update(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('domain') domain: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its domains');
    if (!actor) return;
    const input = UpdateDomainRequestSchema.safeParse({ joinPolicy: field(req, 'joinPolicy'), enforceSso: field(req, 'enforceSso') === 'on' });
    if (!input.success) return this.render(req, res, actor, 400, `Choose who may join through ${domain}.`);
    await this.act(req, res, actor, 'saved', domain, () => this.domains.update(actor, domain, input.data));
  }

  @Post(':domain/remove')
  @UseGuards(CsrfGuard)
  async remove(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('domain') domain: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its domains');
    if (actor) await this.act(req, res, actor, 'removed', '', () => this.domains.remove(actor, domain));
  }

  @Post('requests/:userId/approve')
  @UseGuards(CsrfGuard)
  async approve(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('userId', uuid) userId: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its domains');
    if (actor) await this.act(req, res, actor, 'approved', '', () => this.domains.approve(actor, userId));
  }

  @Post('requests/:userId/decline')
  @UseGuards(CsrfGuard)
  async decline(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('userId', uuid) userId: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its domains');
    if (actor) await this.act(req, res, actor, 'declined', '', () => this.domains.decline(actor, userId));
  }


  private act(req: Request, res: Response, actor: OrgActor, done: string, domain: string, work: () => Promise<unknown>) {
    // Every refusal the service words, a 503 from DNS included, is shown on the page it came from.
    const anchor = domain ? `#${encodeURIComponent(domainAnchor(domain))}` : '';
    return changeThenRedirect(res, orgPagePath(actor.organization.slug, `domains?done=${done}${anchor}`), work, (status, error) => this.render(req, res, actor, status, error));
  }

  private async render(req: Request, res: Response, actor: OrgActor, status: number, error: string | undefined) {
    const domains = await this.domains.list(actor);
    const requests = await this.domains.listJoinRequests(actor);
    const org = actor.organization;
    res.status(status).render('org-domains', {
      title: `Domains of ${org.name}`,
      ...this.adminPages.frame(req, org, 'domains'),
      domains: domains.map((d) => ({
        ...d,
        anchor: domainAnchor(d.domain),
        verifiedAt: d.verifiedAt ? utcMinute(d.verifiedAt) : null,
        policies: JOIN_POLICIES.map((value) => ({ value, label: POLICY_WORDS[value], selected: value === d.joinPolicy })),
      })),
      requests: requests.map((r) => ({ ...r, requestedAt: utcMinute(r.requestedAt) })),
      done: error ? undefined : DONE[queryParam(req, 'done')],
      error,
    });
  }
}

/** An id for a domain's section: its name with dots as dashes. */
const domainAnchor = (domain: string) => `domain-${domain.replace(/[^a-z0-9-]/g, '-')}`;
