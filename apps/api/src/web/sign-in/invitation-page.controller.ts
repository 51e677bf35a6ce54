import { Controller, Get, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { INVITATION_DAYS, InvitationsService, UnusableInvitationError } from '../../accounts/invitations.service.js';
import { Public } from '../../auth/public.decorator.js';
import { MIN_PASSWORD_LENGTH, UsersService } from '../../users/users.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { toWebUser, saveSession } from '../../web-sessions/web-account.js';
import { field, queryParam } from '../form.js';
import { CsrfGuard, PageRefusalFilter } from '../page-guards.js';
import { SignInService } from '../sign-in.service.js';
import { SecondFactorsService } from '../../accounts/second-factors.service.js';

/** An invited person follows the mailed link, chooses a password and is signed in. */
@ApiExcludeController()
@Public()
@UseFilters(PageRefusalFilter)
@Controller('invitation')
export class InvitationPageController {
  constructor(
    private readonly invitations: InvitationsService,
    private readonly users: UsersService,
    private readonly signIn: SignInService,
    private readonly factors: SecondFactorsService,
    private readonly csrf: CsrfService,
  ) {}

  @Get()
  async page(@Req() req: Request, @Res() res: Response) {
    const token = queryParam(req, 'token');
    const invited = await this.invitations.usableFor(token);
    if (!invited) return this.renderUnusable(res);
    this.render(req, res, 200, token, invited.email);
  }

  @Post()
  @UseGuards(CsrfGuard)
  async accept(@Req() req: Request, @Res() res: Response) {
    const token = field(req, 'token');
    const password = field(req, 'password');
    const invited = await this.invitations.usableFor(token);
    if (!invited) return this.renderUnusable(res);
    if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) {
      return this.render(req, res, 400, token, invited.email, `Your password needs at least ${MIN_PASSWORD_LENGTH} characters.`);
    }
    if (password !== field(req, 'password_again')) return this.render(req, res, 400, token, invited.email, 'The two passwords are not the same.');
    let userId: string;
    try {
      userId = (await this.invitations.accept(token, password, req.ip ?? null)).userId;
    } catch (err) {
      if (err instanceof UnusableInvitationError) return this.renderUnusable(res);
      throw err;
    }
    const user = await this.users.findById(userId);
    if (!user || user.disabledAt) return res.redirect(303, '/login');
    // A mailed link is one factor: an account with a second one signs in with both.
    if (await this.factors.hasAny(user.id)) return res.redirect(303, '/login?password=set');
    await this.signIn.firstSignIn(req, res, toWebUser(user));
    req.session.notice = 'Welcome to Prospect: your password is set.';
    await saveSession(req);
    res.redirect(303, '/settings/tokens');
  }

  private render(req: Request, res: Response, status: number, token: string, email: string, error?: string) {
    res.status(status).render('invitation', { title: 'Welcome to Prospect', error, token, email, minLength: MIN_PASSWORD_LENGTH, csrfToken: this.csrf.tokenFor(req) });
  }

  private renderUnusable(res: Response) {
    res.status(410).render('invitation-unusable', { title: 'This invitation no longer works', days: INVITATION_DAYS });
  }
}
