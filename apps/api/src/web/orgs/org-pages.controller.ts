import { Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { CreateOrganizationRequestSchema, ORG_ROLES, type OrgRole, roleAtLeast, UpdateOrganizationRequestSchema, utcMinute } from '@prospect/contract';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { ApiException } from '../../common/api-exception.js';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { type OrgActor, OrganizationsService } from '../../organizations/organizations.service.js';
import { UsersService } from '../../users/users.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { saveSession, sessionIssuedAt } from '../../web-sessions/web-account.js';
import { field, pageParam } from '../form.js';
import { accountOf, browserInSudoMode, CsrfGuard, PageRefusalFilter, SignedInGuard, SudoRequired } from '../page-guards.js';
import { OrgAdminPages } from './org-admin-pages.js';
import { describeOrgEvent, memberIdsOf } from './org-log.js';
import { suggestSlug } from './suggest-slug.js';

const EVENTS_PER_PAGE = 25;
const uuid = new ParseUUIDPipe();

/** What each role may do, said once beside the members (the rules are OrganizationsService's). */
const ROLE_LABELS: Record<OrgRole, string> = { owner: 'Owner', admin: 'Admin', member: 'Member' };

interface OrgNotice {
  error?: string;
  nameError?: string;
  typedName?: string;
  deleteError?: string;
}

/**
 * /orgs: the signed-in person's organizations and a form to create one; /orgs/{slug}: one of them,
 * its members with roles, leaving, renaming, deleting (sudo mode) and its log (issue #44 items 7 and
 * 9). Every rule is OrganizationsService's: the page offers only what the viewer's role may do, and
 * shows the service's refusal when it refuses (someone changed something a moment ago). An
 * organization one is not a member of is the site's 404 page, like one that does not exist.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
@Controller('orgs')
export class OrgPagesController {
  constructor(
    private readonly organizations: OrganizationsService,
    private readonly adminPages: OrgAdminPages,
    private readonly users: UsersService,
    private readonly csrf: CsrfService,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  @Get()
  list(@Req() req: Request, @Res() res: Response) {
    return this.renderList(req, res, 200, {});
  }

  @Post()
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async create(@Req() req: Request, @Res() res: Response) {
    const name = field(req, 'name').trim();
    const slug = field(req, 'slug').trim().toLowerCase() || suggestSlug(name);
    const typed = { name, slug: field(req, 'slug').trim() };
    const input = CreateOrganizationRequestSchema.safeParse({ name, slug });
    if (!input.success) {
      const onName = input.error.issues.some((issue) => issue.path[0] === 'name');
      return this.renderList(req, res, 400, {
        typed,
        nameError: onName ? 'Please enter a name: 1 to 80 characters, without control characters.' : undefined,
        slugError: onName
          ? undefined
          : `“${slug}” cannot be an organization’s address: use 2 to 40 lower-case letters, digits or hyphens, not starting or ending with a hyphen.`,
      });
    }
    try {
      await this.organizations.create(req.webUser!.id, input.data, req.ip ?? null);
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() === 409) return this.renderList(req, res, 409, { typed, slugError: err.message });
      throw err;
    }
    return this.done(req, res, `/orgs/${input.data.slug}`, `“${input.data.name}” is created, and you are its owner.`);
  }

  @Get(':slug')
  async show(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.actorOr404(req, res, slug);
    if (actor) await this.render(req, res, 200, actor, {});
  }

  @Post(':slug/name')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async rename(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.actorOr404(req, res, slug);
    if (!actor) return;
    const typedName = field(req, 'name');
    const input = UpdateOrganizationRequestSchema.safeParse({ name: typedName });
    if (!input.success) return this.render(req, res, 400, actor, { nameError: 'Please enter a name: 1 to 80 characters, without control characters.', typedName });
    await this.act(req, res, actor, () => this.organizations.rename(actor, input.data.name), `It is called “${input.data.name}” now.`);
  }

  @Post(':slug/members/:userId/role')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async changeRole(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('userId', uuid) userId: string) {
    const actor = await this.actorOr404(req, res, slug);
    if (!actor) return;
    const role = field(req, 'role') as OrgRole;
    if (!ORG_ROLES.includes(role)) return this.render(req, res, 400, actor, { error: 'Choose a role: owner, admin or member.' });
    const who = await this.memberAddress(actor, userId);
    await this.act(req, res, actor, () => this.organizations.changeRole(actor, userId, role), `${who} is ${article(role)} ${role} now.`);
  }

  @Post(':slug/members/:userId/remove')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async remove(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('userId', uuid) userId: string) {
    const actor = await this.actorOr404(req, res, slug);
    if (!actor) return;
    const who = await this.memberAddress(actor, userId);
    await this.act(req, res, actor, () => this.organizations.removeMember(actor, userId), `${who} is no longer a member.`);
  }

  @Post(':slug/leave')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async leave(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.actorOr404(req, res, slug);
    if (!actor) return;
    await this.act(req, res, actor, () => this.organizations.removeMember(actor, actor.userId), `You left “${actor.organization.name}”.`, '/orgs');
  }

  /**
   * Deletes it: an owner, who types its slug (a deletion ends everything it owns, for every member)
   * and is in sudo mode; out of it, the sudo page asks and sends them back to the organization's page.
   */
  @Post(':slug/delete')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async delete(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.actorOr404(req, res, slug);
    if (!actor) return;
    if (field(req, 'confirm').trim() !== actor.organization.slug) {
      return this.render(req, res, 400, actor, { deleteError: `Type ${actor.organization.slug} to confirm that this organization is to be deleted.` });
    }
    if (!browserInSudoMode(req, this.clock, this.config)) throw new SudoRequired(`/orgs/${actor.organization.slug}`);
    const caller = { via: 'web-session' as const, confirmedAt: req.session.sudoAt };
    await this.act(req, res, actor, () => this.organizations.delete(actor, caller), `“${actor.organization.name}” is deleted, with everything it owned.`, '/orgs');
  }

  /** The member of `slug` this browser's person is, or undefined after answering the site's 404 page. */
  private async actorOr404(req: Request, res: Response, slug: string): Promise<OrgActor | undefined> {
    const organization = slug.length <= 40 ? await this.adminPages.memberOf(req, slug) : undefined;
    if (organization) return { userId: req.webUser!.id, ip: req.ip ?? null, organization };
    // The site's 404 page, with the layout of a signed-in person: an organization one is not in looks like none.
    res.status(404).render('error', { title: 'Page not found', heading: 'Page not found', message: 'There is no page at this address.', account: accountOf(req, this.csrf) });
    return undefined;
  }

  /**
   * Runs a change of the service; then back to `to` (the organization's page) with `done` shown
   * once, so a reload repeats nothing. A refusal (a 4xx of the service) is shown on the page.
   */
  private async act(req: Request, res: Response, actor: OrgActor, change: () => Promise<unknown>, done: string, to = `/orgs/${actor.organization.slug}`) {
    try {
      await change();
    } catch (err) {
      if (!(err instanceof ApiException) || err.getStatus() >= 500) throw err;
      // Removed or deleted a moment ago: their page is now the site's 404.
      const still = await this.adminPages.memberOf(req, actor.organization.slug);
      if (!still) return this.actorOr404(req, res, actor.organization.slug);
      return this.render(req, res, err.getStatus(), { ...actor, organization: still }, { error: err.message });
    }
    await this.done(req, res, to, done);
  }

  private async done(req: Request, res: Response, to: string, notice: string) {
    req.session.notice = notice;
    await saveSession(req);
    res.redirect(303, to);
  }

  /** A member's address for a sentence ("ada@example.com is an admin now"); "The member" for an id not in it (the service says why). */
  private async memberAddress(actor: OrgActor, userId: string): Promise<string> {
    const member = (await this.organizations.listMembers(actor.organization.id)).find((m) => m.user.id === userId);
    return userId === actor.userId ? 'You' : (member?.user.email ?? 'The member');
  }

  private async renderList(req: Request, res: Response, status: number, notice: { typed?: { name: string; slug: string }; nameError?: string; slugError?: string }) {
    const orgs = await this.organizations.listFor(req.webUser!.id, sessionIssuedAt(req));
    res.status(status).render('orgs', {
      title: 'Organizations',
      onOrgs: true,
      account: accountOf(req, this.csrf),
      orgs: orgs.map((o) => ({ ...o, roleLabel: ROLE_LABELS[o.role] })),
      name: notice.typed?.name ?? '',
      slug: notice.typed?.slug ?? '',
      nameError: notice.nameError,
      slugError: notice.slugError,
      error: notice.nameError ?? notice.slugError,
    });
  }

  private async render(req: Request, res: Response, status: number, actor: OrgActor, notice: OrgNotice) {
    const org = actor.organization;
    const viewerAdmin = roleAtLeast(org.role, 'admin');
    const viewerOwner = org.role === 'owner';
    const members = await this.organizations.listMembers(org.id);
    const owners = members.filter((m) => m.role === 'owner').length;
    // What the viewer's role may do to each row, as OrganizationsService rules it (it decides again on each change).
    const rows = members.map((m) => {
      const isYou = m.user.id === actor.userId;
      const lastOwner = m.role === 'owner' && owners === 1;
      const mayManage = viewerAdmin && (m.role !== 'owner' || viewerOwner);
      return {
        id: m.user.id,
        name: m.user.name,
        email: m.user.email,
        roleLabel: ROLE_LABELS[m.role],
        joined: utcMinute(m.joinedAt),
        isYou,
        lastOwner,
        canChangeRole: mayManage && !lastOwner,
        roleOptions: (viewerOwner ? ORG_ROLES : ORG_ROLES.filter((r) => r !== 'owner')).map((r) => ({ value: r, label: ROLE_LABELS[r], selected: r === m.role })),
        canRemove: mayManage && !isYou,
      };
    });
    const page = pageParam(req);
    const log = viewerAdmin ? await this.logPage(org.id, page, members) : undefined;
    res.status(status).render('org', {
      title: org.name,
      onOrgs: true,
      wide: true,
      account: accountOf(req, this.csrf),
      org: { ...org, roleLabel: ROLE_LABELS[org.role] },
      orgTab: { slug: org.slug, overview: true, manages: viewerAdmin },
      members: rows,
      memberCount: members.length,
      viewerAdmin,
      viewerOwner,
      youAreLastOwner: viewerOwner && owners === 1,
      roles: (viewerOwner ? ORG_ROLES : ORG_ROLES.filter((r) => r !== 'owner')).map((r) => ({ label: ROLE_LABELS[r] })),
      name: notice.typedName ?? org.name,
      events: log?.events,
      newer: log && page > 1 ? page - 1 : undefined,
      older: log?.older ? page + 1 : undefined,
      ...notice,
    });
  }

  /** A page of the organization's log, newest first, with the addresses of the members it names (current ones from `members`, former ones looked up). */
  private async logPage(organizationId: string, page: number, members: Array<{ user: { id: string; email: string } }>) {
    const events = await this.organizations.log(organizationId, EVENTS_PER_PAGE + 1, (page - 1) * EVENTS_PER_PAGE);
    const shown = events.slice(0, EVENTS_PER_PAGE);
    const addresses = new Map(members.map((m) => [m.user.id, m.user.email]));
    const former = [...new Set(shown.flatMap(memberIdsOf))].filter((id) => !addresses.has(id));
    for (const user of await Promise.all(former.map((id) => this.users.findById(id)))) if (user) addresses.set(user.id, user.email);
    return {
      events: shown.map((e) => ({ who: e.actorEmail ?? undefined, what: describeOrgEvent(e, addresses), when: utcMinute(e.createdAt), ip: e.ip })),
      older: events.length > EVENTS_PER_PAGE,
    };
  }
}

const article = (role: OrgRole) => (role === 'admin' || role === 'owner' ? 'an' : 'a');
