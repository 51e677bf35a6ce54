import { Controller, Get, Param, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { type SamlConnection, UpdateSamlConnectionRequestSchema, utcMinute } from '@prospect/contract';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { ApiException } from '../../common/api-exception.js';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { FederationRefused } from '../../federation/federation-sign-in.service.js';
import { SamlConnectionsService, serviceProviderOf } from '../../federation/saml/saml-connections.service.js';
import { SamlSignIn } from '../../federation/saml/saml-sign-in.service.js';
import { ORG_PAGE_PREFIX, type OrgActor } from '../../organizations/organizations.service.js';
import { OrganizationsService } from '../../organizations/organizations.service.js';
import { field, queryParam } from '../form.js';
import { browserInSudoMode, CsrfGuard, PageRefusalFilter, SignedInGuard, SudoRequired } from '../page-guards.js';
import { changeThenRedirect, OrgAdminPages, orgPagePath } from './org-admin-pages.js';

const DONE: Record<string, string> = {
  saved: 'Saved. Enter the values above at your IdP if you have not yet, then use “Test sign-in”.',
  policy: 'Saved.',
  removed: 'Removed: the browser sessions it started have ended, and its links are gone. The accounts stay.',
};

const WHAT = 'its SAML connection';

/**
 * /orgs/{slug}/saml (issue #47): the organization's SAML connection for its admins and owners:
 * what to enter at the IdP (entity id, ACS URL, metadata URL, to copy), the IdP's metadata to
 * paste, the policy (enforce, sign-up, IdP-initiated, second-factor contexts), "Test sign-in"
 * (/orgs/{slug}/saml/test: the IdP's answer checked and shown, nobody signed in) and removal.
 * The same SamlConnectionsService as the API; changes ask for sudo mode, as the identity
 * providers' page does (they change who can sign in).
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
@Controller(`${ORG_PAGE_PREFIX.slice(1)}/:slug/saml`)
export class OrgSamlPageController {
  constructor(
    private readonly adminPages: OrgAdminPages,
    private readonly connections: SamlConnectionsService,
    private readonly saml: SamlSignIn,
    private readonly organizations: OrganizationsService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  @Get()
  async page(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, WHAT);
    if (actor) await this.render(req, res, actor, 200, {});
  }

  /** "Test sign-in": off to the IdP; the ACS shows this admin what came back (web/federation/saml-pages.controller.ts). */
  @Get('test')
  async test(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, WHAT);
    if (!actor) return;
    try {
      res.redirect(303, await this.saml.begin(res, actor.organization.slug, 'test', { next: pageOf(actor), userId: actor.userId }));
    } catch (err) {
      if (err instanceof FederationRefused) return this.render(req, res, actor, err.status, { error: err.message });
      throw err;
    }
  }

  /** The IdP's metadata, pasted. */
  @Post()
  @UseGuards(CsrfGuard)
  async save(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.changer(req, res, slug);
    if (!actor) return;
    const xml = field(req, 'idpMetadataXml');
    await this.act(req, res, actor, 'saved', () => this.connections.put(actor, xml), xml);
  }

  @Post('policy')
  @UseGuards(CsrfGuard)
  async policy(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.changer(req, res, slug);
    if (!actor) return;
    const input = UpdateSamlConnectionRequestSchema.safeParse({
      enforce: field(req, 'enforce') === 'on',
      allowSignUp: field(req, 'allowSignUp') === 'on',
      allowIdpInitiated: field(req, 'allowIdpInitiated') === 'on',
      disabled: field(req, 'disabled') === 'on',
      secondFactorContexts: field(req, 'secondFactorContexts').split(/[\s,]+/).filter(Boolean),
    });
    if (!input.success) return this.render(req, res, actor, 400, { error: 'The second-factor contexts are AuthnContextClassRef values (printable, no spaces), at most 20, separated by spaces or new lines.' });
    await this.act(req, res, actor, 'policy', () => this.connections.update(actor, input.data));
  }

  @Post('remove')
  @UseGuards(CsrfGuard)
  async remove(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.changer(req, res, slug);
    if (!actor) return;
    if (field(req, 'confirm') !== actor.organization.slug) return this.render(req, res, actor, 400, { error: `To remove it, type the organization’s slug (${actor.organization.slug}) in the box beside the button.` });
    await this.act(req, res, actor, 'removed', () => this.connections.remove(actor));
  }

  /** An admin, in sudo mode (else off to confirm, and back here). */
  private async changer(req: Request, res: Response, slug: string): Promise<OrgActor | undefined> {
    const actor = await this.adminPages.adminOf(req, res, slug, WHAT);
    if (actor && !browserInSudoMode(req, this.clock, this.config)) throw new SudoRequired(pageOf(actor));
    return actor;
  }

  private act(req: Request, res: Response, actor: OrgActor, done: string, change: () => Promise<unknown>, typed?: string) {
    return changeThenRedirect(res, `${pageOf(actor)}?done=${done}`, change, (status, error) => this.render(req, res, actor, status, { error, typed }));
  }

  private async render(req: Request, res: Response, actor: OrgActor, status: number, notice: { error?: string; typed?: string }) {
    const org = actor.organization;
    let connection: SamlConnection | undefined;
    try {
      connection = await this.connections.get(org);
    } catch (err) {
      if (!(err instanceof ApiException && err.getStatus() === 404)) throw err;
    }
    res.status(status).render('org-saml', {
      title: `SAML · ${org.name}`,
      ...this.adminPages.frame(req, org, 'saml'),
      base: pageOf(actor),
      sp: serviceProviderOf(this.config.publicUrl, org.slug),
      connection: connection && { ...connection, contextsText: connection.secondFactorContexts.join('\n'), updated: utcMinute(connection.updatedAt) },
      verifiedDomains: await this.organizations.verifiedDomains(org.id),
      typed: notice.typed,
      done: DONE[queryParam(req, 'done')],
      error: notice.error,
    });
  }
}

const pageOf = (actor: OrgActor) => orgPagePath(actor.organization.slug, 'saml');
