import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { saveSession } from '../web-sessions/web-account.js';
import { EMAIL_CHANGE_LINK_HOURS, EmailChangeService, EmailTakenError, UnusableEmailChangeLinkError } from '../accounts/email-change.service.js';
import { Public } from '../auth/public.decorator.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import { queryParam } from './form.js';
import { accountOf } from './page-guards.js';

/** The link mailed to a new address: following it (signed in or not) makes it the account's address. */
@ApiExcludeController()
@Public()
@Controller('email-change')
export class EmailChangePageController {
  constructor(
    private readonly emailChange: EmailChangeService,
    private readonly csrf: CsrfService,
  ) {}

  @Get()
  async confirm(@Req() req: Request, @Res() res: Response) {
    const view = (status: number, heading: string, message: string) =>
      res.status(status).render('error', { title: heading, heading, message, account: accountOf(req, this.csrf) });
    try {
      const { email } = await this.emailChange.confirm(queryParam(req, 'token'), req.ip ?? null);
      if (req.webUser) {
        req.session.notice = `Your e-mail address is now ${email}.`;
        await saveSession(req);
        return res.redirect(303, '/settings/account');
      }
      return view(200, 'Your e-mail address is changed', `Your Prospect account's address is now ${email}: sign in with it from now on.`);
    } catch (err) {
      if (err instanceof UnusableEmailChangeLinkError) {
        return view(410, 'This link no longer works', `A link to confirm a new address works once, for ${EMAIL_CHANGE_LINK_HOURS} hours, and using one ends the others. Ask again on your account page.`);
      }
      if (err instanceof EmailTakenError) return view(409, 'That address has an account now', 'Another account uses that address since the link was sent, so yours stays as it was.');
      throw err;
    }
  }
}
