import { Controller, Get, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { saveSession, toWebUser } from '../../web-sessions/web-account.js';
import { ManagedByProviderError } from '../../accounts/account.service.js';
import { EMAIL_CHANGE_LINK_HOURS, EmailChangeService, EmailTakenError, UnusableEmailChangeLinkError } from '../../accounts/email-change.service.js';
import { Public } from '../../auth/public.decorator.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { UsersService } from '../../users/users.service.js';
import { field, queryParam } from '../form.js';
import { accountOf, CsrfGuard, PageRefusalFilter } from '../page-guards.js';
import { SignInService } from '../sign-in.service.js';

/**
 * The link mailed to a new address: it opens a page that asks to confirm (signed in or not), and
 * the confirmation, a POST, makes it the account's address. A GET changes nothing, so a mail
 * scanner that follows links confirms nothing.
 */
@ApiExcludeController()
@Public()
@UseFilters(PageRefusalFilter)
@Controller('email-change')
export class EmailChangePageController {
  constructor(
    private readonly emailChange: EmailChangeService,
    private readonly users: UsersService,
    private readonly signIn: SignInService,
    private readonly csrf: CsrfService,
  ) {}

  @Get()
  async page(@Req() req: Request, @Res() res: Response) {
    const token = queryParam(req, 'token');
    const link = await this.emailChange.usableFor(token);
    if (!link) return this.renderUnusable(req, res);
    res.render('email-change', { title: 'Confirm your new e-mail address', token, newEmail: link.newEmail, oldEmail: link.email, csrfToken: this.csrf.tokenFor(req) });
  }

  @Post()
  @UseGuards(CsrfGuard)
  async confirm(@Req() req: Request, @Res() res: Response) {
    try {
      const changed = await this.emailChange.confirm(field(req, 'token'), req.ip ?? null);
      if (req.webUser?.id === changed.userId) {
        // The new address is a new credential epoch, which ended every session of the account and
        // every device cookie: this browser, the owner's own, signs in again under it, and stays
        // recognised for sign-in under the new address (web/device-cookies.ts).
        const user = await this.users.findById(changed.userId);
        if (user) await this.signIn.signInAgain(req, res, toWebUser(user));
        req.session.notice = `Your e-mail address is now ${changed.email}.`;
        await saveSession(req);
        return res.redirect(303, '/settings/account');
      }
      return this.view(req, res, 200, 'Your e-mail address is changed', `Your Prospect account's address is now ${changed.email}: sign in with it from now on.`);
    } catch (err) {
      if (err instanceof UnusableEmailChangeLinkError) return this.renderUnusable(req, res);
      if (err instanceof EmailTakenError) return this.view(req, res, 409, 'That address has an account now', 'Another account uses that address since the link was sent, so yours stays as it was.');
      if (err instanceof ManagedByProviderError) {
        return this.view(req, res, 403, 'Your address stays as it is', `${err.providerName} manages your address now, so this link no longer changes it. Ask an administrator if it must change.`);
      }
      throw err;
    }
  }

  private renderUnusable(req: Request, res: Response) {
    this.view(
      req,
      res,
      410,
      'This link no longer works',
      `A link to confirm a new address works once, for ${EMAIL_CHANGE_LINK_HOURS} hours, and ends when another one is used or the account's password or address changes. Ask again on your account page.`,
    );
  }

  private view(req: Request, res: Response, status: number, heading: string, message: string) {
    res.status(status).render('error', { title: heading, heading, message, account: accountOf(req, this.csrf) });
  }
}
