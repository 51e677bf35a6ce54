import { Controller, Get, HttpCode, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { hasUnsafeText, looksLikeEmail } from '@prospect/contract';
import { EMAIL_CHANGE_LINK_HOURS, EmailChangeService, SameEmailError } from '../../accounts/email-change.service.js';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { AccountService, ConfirmInSudoMode, LastAdminError, ManagedByProviderError, type OwnerConfirmation, WrongPasswordError } from '../../accounts/account.service.js';
import { SoleOwnerError } from '../../organizations/organizations.service.js';
import { TooManyRequests } from '../../rate-limits/rate-limits.js';
import { MIN_PASSWORD_LENGTH, normalizeEmail } from '../../users/users.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { signedInBrowser } from '../device-cookies.js';
import { field, queryParam } from '../form.js';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { accountOf, CsrfGuard, PageRefusalFilter, browserReconfirmedJustNow, SignedInGuard, SudoRequired } from '../page-guards.js';
import { SignInService } from '../sign-in.service.js';

const DONE: Record<string, string> = {
  name: 'Your name is changed.',
  email: 'Your e-mail address is changed.',
  password: 'Your password is changed. Every other browser was signed out; this one stays signed in.',
};

/**
 * /settings/account: the signed-in person changes their name, address or password, or deletes the
 * account. The last three ask for the password in their own form, which is what sudo mode would ask,
 * counted against this signed-in session (signedInBrowser), never against the account. An account
 * that signs in only through an identity provider makes them just after re-confirming on the sudo
 * page instead (a fresh sign-in there), and one whose domain a provider enforces leaves its address
 * and password to it (AccountService.signInMethod).
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
@Controller('settings/account')
export class AccountPageController {
  constructor(
    private readonly account: AccountService,
    private readonly emailChange: EmailChangeService,
    private readonly signIn: SignInService,
    private readonly csrf: CsrfService,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  @Get()
  show(@Req() req: Request, @Res() res: Response) {
    return this.render(req, res, 200, { done: DONE[queryParam(req, 'done')] });
  }

  @Post('name')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async rename(@Req() req: Request, @Res() res: Response) {
    const name = field(req, 'name').trim();
    if (!name || name.length > 100) return this.render(req, res, 400, { nameError: 'Please enter your name (at most 100 characters).', typedName: name });
    if (hasUnsafeText(name)) return this.render(req, res, 400, { nameError: 'Your name cannot contain control characters, invisible characters or bidirectional text controls.', typedName: name });
    await this.account.rename(req.webUser!.id, name, req.ip ?? null);
    res.redirect(303, '/settings/account?done=name');
  }

  @Post('password')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async changePassword(@Req() req: Request, @Res() res: Response) {
    const next = field(req, 'password');
    if (next.length < MIN_PASSWORD_LENGTH || next.length > 1024) {
      return this.render(req, res, 400, { passwordError: `Your new password needs at least ${MIN_PASSWORD_LENGTH} characters.` });
    }
    if (next !== field(req, 'password_again')) return this.render(req, res, 400, { passwordError: 'The two new passwords are not the same.' });
    const user = req.webUser!;
    const refused = await this.refusal(req, res, 'passwordError', () =>
      this.account.changePassword(user, this.confirmation(req, 'current_password'), next, req.ip ?? null, signedInBrowser(req)),
    );
    if (refused) return;
    // Every session of the account ended, this one too: this browser signs in again at once.
    await this.signIn.signInAgain(req, res, user);
    res.redirect(303, '/settings/account?done=password');
  }

  @Post('email')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async changeEmail(@Req() req: Request, @Res() res: Response) {
    const newEmail = field(req, 'email').trim();
    if (!looksLikeEmail(newEmail) || newEmail.length > 320 || hasUnsafeText(newEmail)) {
      return this.render(req, res, 400, { emailError: 'Please enter a valid e-mail address.', typedEmail: newEmail });
    }
    const refused = await this.refusal(req, res, 'emailError', () =>
      this.emailChange.request(req.webUser!, newEmail, this.confirmation(req, 'password'), req.ip ?? null, signedInBrowser(req)),
    );
    if (refused) return;
    return this.render(req, res, 200, { emailSent: normalizeEmail(newEmail) });
  }

  @Post('delete')
  @HttpCode(200)
  @UseGuards(CsrfGuard)
  async deleteAccount(@Req() req: Request, @Res() res: Response) {
    const user = req.webUser!;
    const refused = await this.refusal(req, res, 'deleteError', () => this.account.deleteAccount(user, this.confirmation(req, 'password'), req.ip ?? null, signedInBrowser(req)));
    if (refused) return;
    // The session's row went with the account; this clears the browser's copy.
    await this.signIn.logOut(req);
    res.redirect(303, '/login?account=deleted');
  }

  /** What the form gave to confirm the change: the password in `field`, and whether the person re-confirmed a moment ago (for an account without one). */
  private confirmation(req: Request, passwordField: string): OwnerConfirmation {
    return { password: field(req, passwordField), reconfirmedJustNow: browserReconfirmedJustNow(req, this.clock, this.config) };
  }

  /**
   * Runs a change that needs the owner's confirmation; on a refusal, renders the page with its
   * reason under `slot` and returns true. An account that confirms on the sudo page and has not
   * just done so is shown it, and comes back here.
   */
  private async refusal(req: Request, res: Response, slot: 'passwordError' | 'emailError' | 'deleteError', change: () => Promise<void>): Promise<boolean> {
    try {
      await change();
      return false;
    } catch (err) {
      if (err instanceof ConfirmInSudoMode) throw new SudoRequired('/settings/account');
      if (err instanceof WrongPasswordError) {
        await this.render(req, res, 400, { [slot]: slot === 'passwordError' ? 'Your current password is not right.' : 'That password is not right.' });
      } else if (err instanceof SameEmailError) {
        await this.render(req, res, 400, { [slot]: 'That is your address already.' });
      } else if (err instanceof ManagedByProviderError) {
        await this.render(req, res, 403, { [slot]: `Your address and how you sign in are managed by ${err.providerName}: ask an administrator to change them.` });
      } else if (err instanceof SoleOwnerError) {
        const names = err.organizations.map((o) => `“${o.name}” (/orgs/${o.slug})`).join(', ');
        await this.render(req, res, 409, { [slot]: `You are the only owner of ${names}, which has other members: make one of them an owner, or delete the organization, first.` });
      } else if (err instanceof LastAdminError) {
        await this.render(req, res, 409, { [slot]: 'You are the only administrator. Make someone else an administrator first, so that this service keeps one.' });
      } else if (err instanceof TooManyRequests) {
        res.set('Retry-After', String(err.retryAfterSeconds));
        await this.render(req, res, 429, { [slot]: err.message }); // what was counted, in words (rate-limits.ts)
      } else {
        throw err;
      }
      return true;
    }
  }

  private async render(req: Request, res: Response, status: number, notice: { done?: string; nameError?: string; passwordError?: string; emailError?: string; emailSent?: string; deleteError?: string; typedName?: string; typedEmail?: string }) {
    const account = accountOf(req, this.csrf)!;
    const method = await this.account.signInMethod(account.user);
    res.status(status).render('account', {
      // Forms ask for the password only of an account that has one it signs in with; else a re-confirmation on the sudo page does.
      asksPassword: method.confirmsWith === 'password',
      enforcedBy: method.confirmsWith === 'sudo' ? method.enforcedBy : undefined,
      title: 'Your account',
      onAccount: true,
      onAccountTab: true,
      account,
      name: notice.typedName ?? account.user.name,
      newEmail: notice.typedEmail ?? '',
      linkHours: EMAIL_CHANGE_LINK_HOURS,
      minLength: MIN_PASSWORD_LENGTH,
      ...notice,
    });
  }
}
