import { Controller, Get, Param, ParseUUIDPipe, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { ERROR_CODES, hasUnsafeText, InviteUserRequestSchema, utcMinute } from '@prospect/contract';
import type { Request, Response } from 'express';
import { INVITATION_DAYS } from '../../accounts/invitations.service.js';
import { AdminUserRefusal, AdminUsersService } from '../../admin/admin-users.service.js';
import { Public } from '../../auth/public.decorator.js';
import { ApiException } from '../../common/api-exception.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { field, pageParam, queryParam } from '../form.js';
import { accountOf, AdminGuard, CsrfGuard, PageRefusalFilter, SignedInGuard, SudoGuard } from '../page-guards.js';
import { IdentityProvidersService } from '../../federation/identity-providers.service.js';
import type { LinkForAdmin } from '../../federation/identity-providers.service.js';

const DONE: Record<string, string> = {
  disabled: 'Disabled: they cannot sign in, and their tokens and sessions no longer work anywhere.',
  enabled: 'Enabled: they can sign in again.',
  admin: 'They are an administrator now.',
  user: 'They are no longer an administrator.',
  'reset-link': 'A reset link is on its way to them.',
  'block-cleared': 'Their sign-in block is cleared.',
  'no-block': 'There was no sign-in block to clear.',
  'factor-removed': 'Their authenticator app and recovery codes are removed, and their browsers signed out: they sign in with the password alone now.',
  unlinked: 'The identity provider is unlinked, and the browser sessions it started have ended: it no longer signs them in.',
};

/** A person's identity-provider links as the pages show them: "last verified at the provider". */
const linkView = (link: LinkForAdmin) => ({
  id: link.id,
  providerName: link.providerName,
  subject: link.subject,
  linked: utcMinute(link.createdAt),
  lastVerified: utcMinute(link.lastVerifiedAt),
  refused: link.refusedAt && utcMinute(link.refusedAt),
});

/** /admin/users: admins find people, invite them, disable or enable them, make admins, send reset links. */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard, AdminGuard)
@UseFilters(PageRefusalFilter)
@Controller('admin/users')
export class AdminUsersPageController {
  constructor(
    private readonly admin: AdminUsersService,
    private readonly csrf: CsrfService,
    private readonly identityProviders: IdentityProvidersService,
  ) {}

  @Get()
  async list(@Req() req: Request, @Res() res: Response) {
    await this.renderList(req, res, 200, { invited: queryParam(req, 'invited') || undefined });
  }

  @Post('invite')
  @UseGuards(CsrfGuard, SudoGuard)
  async invite(@Req() req: Request, @Res() res: Response) {
    const typed = { name: field(req, 'name'), email: field(req, 'email') };
    const input = InviteUserRequestSchema.safeParse(typed);
    if (!input.success) {
      const error = input.error.issues[0]?.path[0] === 'email' ? 'Please enter a valid e-mail address.' : 'Please enter their name (at most 100 characters, no control characters).';
      return this.renderList(req, res, 400, { error, typed });
    }
    try {
      await this.admin.invite(input.data, req.webUser!.id, req.ip ?? null);
    } catch (err) {
      if (err instanceof ApiException && err.getStatus() === 409) return this.renderList(req, res, 409, { error: 'An account with this e-mail address already exists.', typed });
      throw err;
    }
    res.redirect(303, `/admin/users?invited=${encodeURIComponent(input.data.email)}`);
  }

  @Get(':id')
  async show(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    await this.renderPerson(req, res, 200, id, { done: DONE[queryParam(req, 'done')] });
  }

  @Post(':id/disable')
  @UseGuards(CsrfGuard, SudoGuard)
  disable(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    return this.act(req, res, id, async () => (await this.admin.update(id, { disabled: true }, req.webUser!.id, req.ip ?? null), 'disabled'));
  }

  @Post(':id/enable')
  @UseGuards(CsrfGuard, SudoGuard)
  enable(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    return this.act(req, res, id, async () => (await this.admin.update(id, { disabled: false }, req.webUser!.id, req.ip ?? null), 'enabled'));
  }

  @Post(':id/admin')
  @UseGuards(CsrfGuard, SudoGuard)
  setAdmin(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    const admin = field(req, 'admin') === 'true';
    return this.act(req, res, id, async () => (await this.admin.update(id, { admin }, req.webUser!.id, req.ip ?? null), admin ? 'admin' : 'user'));
  }

  @Post(':id/reset-link')
  @UseGuards(CsrfGuard, SudoGuard)
  sendResetLink(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    return this.act(req, res, id, async () => (await this.admin.sendResetLink(id, req.webUser!.id, req.ip ?? null), 'reset-link'));
  }

  @Post(':id/clear-sign-in-block')
  @UseGuards(CsrfGuard, SudoGuard)
  clearSignInBlock(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    return this.act(req, res, id, async () => ((await this.admin.clearSignInBlock(id, req.webUser!.id, req.ip ?? null)) ? 'block-cleared' : 'no-block'));
  }

  @Post(':id/second-factor/remove')
  @UseGuards(CsrfGuard, SudoGuard)
  removeSecondFactor(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string) {
    return this.act(req, res, id, async () => (await this.admin.removeSecondFactor(id, req.webUser!.id, req.ip ?? null), 'factor-removed'));
  }

  /** Removes one of the person's identity-provider links (it no longer signs them in; its sessions end). */
  @Post(':id/links/:linkId/unlink')
  @UseGuards(CsrfGuard, SudoGuard)
  unlink(@Req() req: Request, @Res() res: Response, @Param('id', new ParseUUIDPipe()) id: string, @Param('linkId', new ParseUUIDPipe()) linkId: string) {
    return this.act(req, res, id, async () => {
      try {
        await this.identityProviders.unlink(id, linkId, req.webUser!.id, req.ip ?? null);
      } catch (err) {
        if (err instanceof ApiException && err.getStatus() === 404) throw new AdminUserRefusal(400, ERROR_CODES.invalidRequest, err.message);
        throw err;
      }
      return 'unlinked';
    });
  }

  /** Runs an action, then shows the person again (a reload repeats nothing); a refusal is shown on their page. */
  private async act(req: Request, res: Response, id: string, action: () => Promise<string>) {
    let done: string;
    try {
      done = await action();
    } catch (err) {
      if (!(err instanceof AdminUserRefusal)) throw err;
      if (err.getStatus() === 404) return this.renderList(req, res, 404, { error: err.message });
      return this.renderPerson(req, res, err.getStatus(), id, { error: err.message });
    }
    res.redirect(303, `/admin/users/${id}?done=${done}`);
  }

  private async renderList(req: Request, res: Response, status: number, notice: { invited?: string; error?: string; typed?: { name: string; email: string } }) {
    const q = queryParam(req, 'q').trim().slice(0, 320);
    const page = pageParam(req);
    const list = await this.admin.list(hasUnsafeText(q) ? '' : q, page);
    const links = await this.identityProviders.linksOf(list.users.map((u) => u.id));
    const pages = Math.max(1, Math.ceil(list.total / list.perPage));
    const link = (to: number) => new URLSearchParams({ ...(q ? { q } : {}), page: String(to) }).toString();
    res.status(status).render('admin-users', {
      title: 'People',
      wide: true,
      onUsers: true,
      account: accountOf(req, this.csrf),
      q,
      total: list.total,
      page,
      pages: pages > 1 ? pages : undefined,
      previous: page > 1 ? link(page - 1) : undefined,
      next: page < pages ? link(page + 1) : undefined,
      users: list.users.map((u) => ({
        ...u,
        created: utcMinute(new Date(u.createdAt)),
        lastSignIn: u.lastSignInAt && utcMinute(new Date(u.lastSignInAt)),
        links: links.filter((link) => link.userId === u.id).map(linkView),
      })),
      invitationDays: INVITATION_DAYS,
      ...notice,
    });
  }

  private async renderPerson(req: Request, res: Response, status: number, id: string, notice: { done?: string; error?: string }) {
    let person;
    try {
      person = await this.admin.get(id);
    } catch (err) {
      if (err instanceof AdminUserRefusal) return this.renderList(req, res, 404, { error: err.message });
      throw err;
    }
    res.status(status).render('admin-user', {
      title: person.name,
      onUsers: true,
      account: accountOf(req, this.csrf),
      person: { ...person, isYou: person.id === req.webUser!.id },
      created: utcMinute(new Date(person.createdAt)),
      lastSignIn: person.lastSignInAt && utcMinute(new Date(person.lastSignInAt)),
      links: (await this.identityProviders.linksOf([person.id])).map(linkView),
      ...notice,
    });
  }
}
