import { type ArgumentsHost, type CanActivate, Catch, type ExceptionFilter, type ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { PATH_METADATA } from '@nestjs/common/constants.js';
import type { Request, Response } from 'express';
import { Reflector } from '@nestjs/core';
import { EmailVerificationService } from '../accounts/email-verification.service.js';
import { Clock } from '../common/clock.js';
import { AppConfig } from '../config/app-config.js';
import { inSudoMode, reconfirmedJustNow } from '../auth/sudo-rule.js';
import { SudoPages } from './sudo-pages.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import type { WebUser } from '../web-sessions/web-account.js';
import { type ApproverState, stepBeforeApproving } from '../grants/approval-rules.js';

/** What the layout shows of the signed-in person, and the token its sign-out form needs. */
export interface WebAccount {
  user: WebUser;
  csrfToken: string;
  /** The layout links the admin pages for admins only. */
  isAdmin: boolean;
  /** A message for the first page after a redirect (the session's `notice`), shown once. */
  notice?: string;
}

/** A page for signed-in people only was asked for without a session. */
export class SignInRequired extends Error {
  constructor(readonly returnTo: string) {
    super('sign-in required');
  }
}

/** A form came without this session's CSRF token (stale, or sent by another site). */
export class FormRefused extends Error {
  constructor(readonly returnTo: string) {
    super('form refused');
  }
}

/** A signed-in person who is not an admin asked for an admin page. */
export class AdminRequired extends Error {
  constructor() {
    super('admin required');
  }
}

/** Sudo mode has lapsed: the person confirms who they are before this, then comes back to `returnTo`. */
export class SudoRequired extends Error {
  constructor(readonly returnTo: string) {
    super('sudo required');
  }
}

/**
 * The person left the organization named `organization` (at `path`) after this browser signed in, and is a member
 * again since: the session does not act for it (organizations/ departureEndsIt), a new sign-in does.
 */
export class SignInAgain extends Error {
  constructor(
    readonly organization: string,
    readonly path: string,
  ) {
    super('sign in again');
  }
}

/** REQUIRE_SECOND_FACTOR: a person without one goes to set it up before anything else. */
export class SecondFactorRequired extends Error {
  constructor() {
    super('second factor required');
  }
}

/** Marks the pages a person who must set up a second factor may still use (the one where they do). */
export const AllowsWithoutSecondFactor = () => SetMetadata(ALLOWS_WITHOUT_SECOND_FACTOR, true);
const ALLOWS_WITHOUT_SECOND_FACTOR = 'prospect:allowsWithoutSecondFactor';

/** REQUIRE_EMAIL_VERIFICATION: a person who has not followed their verification link asked to approve or create a token. */
export class EmailUnverified extends Error {
  constructor(readonly returnTo: string) {
    super('e-mail not verified');
  }
}

/** The page a request belongs to: itself for a GET, else its controller's page (`/device` for `/device/approve`). */
function pageOf(context: ExecutionContext): string {
  const req = context.switchToHttp().getRequest<Request>();
  if (req.method === 'GET') return req.originalUrl;
  const base = Reflect.getMetadata(PATH_METADATA, context.getClass()) as string | undefined;
  return `/${(base ?? '').replace(/^\/+/, '')}`;
}

/**
 * Lets signed-in people through; sends everyone else to sign in and back. With
 * REQUIRE_SECOND_FACTOR, one who signed in without a second factor is sent to set it up.
 */
@Injectable()
export class SignedInGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    if (!req.webUser) throw new SignInRequired(pageOf(context));
    if (req.session.mustEnrolSecondFactor && !this.reflector.getAllAndOverride<boolean>(ALLOWS_WITHOUT_SECOND_FACTOR, [context.getHandler(), context.getClass()])) {
      throw new SecondFactorRequired();
    }
    return true;
  }
}

/** This browser's session is in sudo mode: the one rule (auth/sudo-rule.ts inSudoMode) applied to the session's last proof. */
export function browserInSudoMode(req: Request, clock: Clock, config: AppConfig): boolean {
  return inSudoMode(req.session.sudoAt, clock, config);
}

/** This browser's person re-confirmed on the sudo page a moment ago (auth/sudo-rule.ts reconfirmedJustNow). */
export function browserReconfirmedJustNow(req: Request, clock: Clock, config: AppConfig): boolean {
  return reconfirmedJustNow(req.session.reconfirmedAt, clock, config);
}

/** Where a person goes back to after a step before this request: its page, with the code a form carried (`user_code`). */
function returnToOf(context: ExecutionContext): string {
  const req = context.switchToHttp().getRequest<Request>();
  const code = (req.body as Record<string, unknown> | undefined)?.user_code;
  return req.method !== 'GET' && typeof code === 'string' ? `${pageOf(context)}?user_code=${encodeURIComponent(code)}` : pageOf(context);
}

/**
 * After SignedInGuard: lets the request through while sudo mode lasts (SUDO_SECONDS since the
 * sign-in or the last re-confirmation); else the person confirms first and comes back to the
 * page, with the code it was showing (`user_code`) when a form carried one.
 */
@Injectable()
export class SudoGuard implements CanActivate {
  constructor(
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    if (browserInSudoMode(req, this.clock, this.config)) return true;
    throw new SudoRequired(returnToOf(context));
  }
}

/** The rule before an approval (grants/approval-rules.ts), answered the pages' way: each step a page to go through, then back to `returnTo`. */
@Injectable()
export class ApprovalRule {
  constructor(
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly verification: EmailVerificationService,
  ) {}

  /** This browser's person as an approver. */
  stateOf(req: Request): ApproverState {
    return {
      signedIn: req.webUser !== undefined,
      mustEnrolSecondFactor: req.session?.mustEnrolSecondFactor === true,
      addressUnproven: req.webUser !== undefined && this.verification.blocks(req.webUser),
      inSudoMode: req.session !== undefined && browserInSudoMode(req, this.clock, this.config),
    };
  }

  /** @throws the page of the first step before approving (SignInRequired, SecondFactorRequired, EmailUnverified, SudoRequired). */
  require(req: Request, returnTo: string): void {
    switch (stepBeforeApproving(this.stateOf(req))) {
      case 'sign-in':
        throw new SignInRequired(returnTo);
      case 'enrol-second-factor':
        throw new SecondFactorRequired();
      case 'verify-email':
        throw new EmailUnverified(returnTo);
      case 'confirm':
        throw new SudoRequired(returnTo);
      case null:
    }
  }
}

/** A form that approves (a device login, a token): the approval rule, back to its page. */
@Injectable()
export class MayApproveGuard implements CanActivate {
  constructor(private readonly rule: ApprovalRule) {}
  canActivate(context: ExecutionContext): boolean {
    this.rule.require(context.switchToHttp().getRequest<Request>(), returnToOf(context));
    return true;
  }
}

/** After SignedInGuard: lets admins through; everyone else gets a 403 page. */
@Injectable()
export class AdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    if (context.switchToHttp().getRequest<Request>().webUser?.role === 'admin') return true;
    throw new AdminRequired();
  }
}

/** After SignedInGuard: with REQUIRE_EMAIL_VERIFICATION, only a verified address approves device logins or creates tokens. */
@Injectable()
export class VerifiedEmailGuard implements CanActivate {
  constructor(private readonly verification: EmailVerificationService) {}
  canActivate(context: ExecutionContext): boolean {
    if (!this.verification.blocks(context.switchToHttp().getRequest<Request>().webUser!)) return true;
    throw new EmailUnverified(pageOf(context));
  }
}

/** Every form post carries the session's CSRF token (csrf-sync); a missing or wrong one is refused before anything runs. */
@Injectable()
export class CsrfGuard implements CanActivate {
  constructor(private readonly csrf: CsrfService) {}
  canActivate(context: ExecutionContext): boolean {
    if (this.csrf.isValid(context.switchToHttp().getRequest<Request>())) return true;
    throw new FormRefused(pageOf(context));
  }
}

/** The signed-in person for the layout, or undefined. */
export function accountOf(req: Request, csrf: CsrfService): WebAccount | undefined {
  if (!req.webUser) return undefined;
  const notice = req.session.notice;
  if (notice !== undefined) delete req.session.notice;
  return { user: req.webUser, csrfToken: csrf.tokenFor(req), isAdmin: req.webUser.role === 'admin', notice };
}

/** Turns the refusals above into what a browser should see. */
@Catch(SignInRequired, FormRefused, AdminRequired, EmailUnverified, SudoRequired, SecondFactorRequired, SignInAgain)
export class PageRefusalFilter implements ExceptionFilter {
  constructor(
    private readonly csrf: CsrfService,
    private readonly sudo: SudoPages,
  ) {}

  catch(refusal: SignInRequired | FormRefused | AdminRequired | EmailUnverified | SudoRequired | SecondFactorRequired | SignInAgain, host: ArgumentsHost): void | Promise<void> {
    const req = host.switchToHttp().getRequest<Request>();
    const res = host.switchToHttp().getResponse<Response>();
    if (refusal instanceof SignInRequired) return res.redirect(303, `/login?next=${encodeURIComponent(refusal.returnTo)}`);
    if (refusal instanceof AdminRequired) {
      const heading = 'Administrators only';
      const message = 'This page is for Prospect administrators. If you need something changed here, ask one of them.';
      return res.status(403).render('error', { title: heading, heading, message, account: accountOf(req, this.csrf) });
    }
    if (refusal instanceof SecondFactorRequired) return res.redirect(303, '/settings/security');
    if (refusal instanceof SudoRequired) {
      // A page's script (passkeys) asked: it sends the person to confirm, then back.
      if (req.get('accept')?.includes('application/json')) {
        return void res.status(403).json({ statusCode: 403, error: 'sudo_required', message: 'Confirm it is you first.', confirmAt: `/sudo?next=${encodeURIComponent(refusal.returnTo)}` });
      }
      return this.sudo.render(req, res, 403, refusal.returnTo);
    }
    if (refusal instanceof SignInAgain) {
      return res.status(403).render('sign-in-again', { title: 'Sign in again', name: refusal.organization, next: refusal.path, account: accountOf(req, this.csrf) });
    }
    if (refusal instanceof EmailUnverified) {
      return res.status(403).render('verify-email-needed', { title: 'Confirm your e-mail address', next: refusal.returnTo, account: accountOf(req, this.csrf) });
    }
    res.status(403).render('form-refused', { title: 'Request refused', back: refusal.returnTo, account: accountOf(req, this.csrf) });
  }
}
