import { Controller, Get, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { hasUnsafeText, ORG_INVITATION_DAYS, type OrgRole, utcMinute } from '@prospect/contract';
import { ApiException } from '../../common/api-exception.js';
import { Public } from '../../auth/public.decorator.js';
import { AppConfig } from '../../config/app-config.js';
import { FederationPolicy } from '../../federation/federation-policy.js';
import {
  type Acceptance,
  InvitationNotForYou,
  type InvitationEnd,
  InvitationUnusable,
  ORG_INVITATION_PAGE,
  OrganizationInvitationsService,
} from '../../organizations/organization-invitations.service.js';
import { ORG_PAGE_PREFIX } from '../../organizations/organizations.service.js';
import { RateLimits, TooManyRequests } from '../../rate-limits/rate-limits.js';
import { MIN_PASSWORD_LENGTH } from '../../users/users.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { saveSession, toWebUser } from '../../web-sessions/web-account.js';
import { field, queryParam } from '../form.js';
import { accountOf, CsrfGuard, PageRefusalFilter } from '../page-guards.js';
import { SignInService } from '../sign-in.service.js';

const roleWords = (role: OrgRole) => (role === 'admin' ? 'an admin' : `a ${role}`);

/** What each ended link says (410: it existed and is gone; an unknown one 404). */
const ENDED: Record<InvitationEnd, { status: number; heading: string; message: string }> = {
  unknown: { status: 404, heading: 'This invitation does not exist', message: 'The link is not one Prospect sent, or its organization was deleted. Check that you opened the whole link from the mail.' },
  expired: { status: 410, heading: 'This invitation has expired', message: `An invitation works for ${ORG_INVITATION_DAYS} days. Ask an admin of the organization to invite you again.` },
  revoked: { status: 410, heading: 'This invitation was withdrawn', message: 'An admin of the organization revoked it, or invited your address again with a newer link: use the newest mail, or ask them for a new invitation.' },
  used: { status: 410, heading: 'This invitation was already accepted', message: 'An invitation works once, and this one has been used. If it was you, the organization is on your account already.' },
  inviter: {
    status: 410,
    heading: 'This invitation no longer works',
    message: 'Whoever sent it is no longer allowed to invite you into this organization with this role, or has changed their password or address since. Ask an admin of the organization for a new invitation.',
  },
};

/**
 * The page a mailed organization invitation opens (issue #44): `/invitations?token=…` (the admin's
 * account invitation is `/invitation?token=…`, singular; the token stays in the query, which the
 * request log never keeps). It shows the organization and the role; a signed-in person whose
 * verified address is the invited one accepts with a button; anyone else signed in is told which
 * address it was sent to; a signed-out person signs in and comes back, or creates the account of
 * the invited address here, which the link verifies, unless a provider enforces the address's
 * domain: then they continue with that provider, which brings them back here.
 */
@ApiExcludeController()
@Public()
@UseFilters(PageRefusalFilter)
@Controller(ORG_INVITATION_PAGE.slice(1))
export class OrgInvitationPageController {
  constructor(
    private readonly invitations: OrganizationInvitationsService,
    private readonly csrf: CsrfService,
    private readonly signIn: SignInService,
    private readonly limits: RateLimits,
    private readonly federation: FederationPolicy,
    private readonly config: AppConfig,
  ) {}

  @Get()
  async page(@Req() req: Request, @Res() res: Response) {
    return this.render(req, res, queryParam(req, 'token'), 200);
  }

  /** Accept, as the signed-in person; a signed-out one signs in first and comes back here. */
  @Post()
  @UseGuards(CsrfGuard)
  async accept(@Req() req: Request, @Res() res: Response) {
    const token = field(req, 'token');
    if (!req.webUser) return res.redirect(303, `/login?next=${encodeURIComponent(pageOf(token))}`);
    if (req.session.mustEnrolSecondFactor) return res.redirect(303, '/settings/security');
    try {
      return await this.joined(req, res, await this.invitations.accept(token, req.webUser.id, req.ip ?? null));
    } catch (err) {
      if (err instanceof InvitationUnusable || err instanceof InvitationNotForYou) return this.render(req, res, token, 200, undefined, err);
      throw err;
    }
  }

  /** Creates the invited address's account (verified by the link), joins and signs in. */
  @Post('signup')
  @UseGuards(CsrfGuard)
  async signUp(@Req() req: Request, @Res() res: Response) {
    const token = field(req, 'token');
    if (req.webUser) return res.redirect(303, pageOf(token));
    // Closed sign-up (ALLOW_SIGNUP=false) means accounts come from the instance's administrators only: an organization's admin cannot open it.
    if (!this.config.allowSignup) return this.render(req, res, token, 403, 'Sign-up is closed on this Prospect: ask its administrator for an account, then sign in to accept.');
    const name = field(req, 'name').trim();
    const password = field(req, 'password');
    const refuse = (status: number, error: string) => this.render(req, res, token, status, error);
    if (!name || name.length > 100) return refuse(400, 'Please enter your name (at most 100 characters).');
    if (hasUnsafeText(name)) return refuse(400, 'Your name cannot contain control characters, invisible characters or bidirectional text controls.');
    if (password.length < MIN_PASSWORD_LENGTH || password.length > 1024) return refuse(400, `Your password needs at least ${MIN_PASSWORD_LENGTH} characters.`);
    let preview;
    try {
      preview = await this.invitations.preview(token);
    } catch (err) {
      if (err instanceof InvitationUnusable) return this.render(req, res, token, 200, undefined, err);
      throw err;
    }
    // A domain a provider enforces signs in there, and the provider makes the account (issue #34).
    const provider = await this.federation.enforcingProviderFor(preview.email);
    if (provider) return refuse(403, `${preview.email} signs in with ${provider.displayName}: sign in with it, and you come back here to accept.`);
    try {
      await this.limits.signUp(req.ip ?? '');
      const joined = await this.invitations.signUpAndAccept(token, { name, password }, req.ip ?? null);
      await this.signIn.firstSignIn(req, res, toWebUser(joined.user));
      return await this.joined(req, res, joined);
    } catch (err) {
      if (err instanceof InvitationUnusable) return this.render(req, res, token, 200, undefined, err);
      if (err instanceof TooManyRequests) {
        res.set('Retry-After', String(err.retryAfterSeconds));
        return refuse(429, 'Too many new accounts from your address. Please try again later.');
      }
      if (err instanceof ApiException && err.getStatus() === 409) return refuse(409, `${preview.email} has an account already: sign in to accept.`);
      throw err;
    }
  }

  private async joined(req: Request, res: Response, joined: Acceptance) {
    req.session.notice = joined.added
      ? `You joined “${joined.organization.name}” as ${roleWords(joined.role)}.`
      : `You are a member of “${joined.organization.name}” already: your role there is unchanged.`;
    await saveSession(req);
    res.redirect(303, `${ORG_PAGE_PREFIX}/${joined.organization.slug}`);
  }

  /** The page for the link, as it is for this browser's person now; `refusal` when an accept just failed. */
  private async render(req: Request, res: Response, token: string, status: number, error?: string, refusal?: InvitationUnusable | InvitationNotForYou) {
    const account = accountOf(req, this.csrf);
    let end = refusal instanceof InvitationUnusable ? refusal.end : undefined;
    let preview;
    if (!end) {
      try {
        preview = await this.invitations.preview(token);
      } catch (err) {
        if (!(err instanceof InvitationUnusable)) throw err;
        end = err.end;
      }
    }
    if (end || !preview) {
      const ended = ENDED[end ?? 'unknown'];
      return res.status(ended.status).render('org-invitation-unusable', { title: ended.heading, ...ended, account });
    }
    const user = req.webUser;
    const sameAddress = user !== undefined && user.email.toLowerCase() === preview.email;
    const notYours = refusal instanceof InvitationNotForYou ? refusal.reason : user === undefined ? undefined : !sameAddress ? 'other-address' : user.emailVerified ? undefined : 'unverified';
    const next = pageOf(token);
    // Signed out, for an address whose domain a provider enforces (the instance's, or the
    // organization's through its verified domain): that provider signs them in (and makes their
    // account, if it may), then back here; no password sign-in or sign-up is offered, as /login and
    // /signup would refuse them.
    const provider = user === undefined ? await this.federation.enforcingProviderFor(preview.email) : undefined;
    const sso = provider && {
      displayName: provider.displayName,
      href: `${provider.signInPath}?${new URLSearchParams({ next, login_hint: preview.email }).toString()}`,
    };
    res.status(notYours && status === 200 ? 403 : status).render('org-invitation', {
      title: `Join ${preview.organization.name}`,
      account,
      error,
      token,
      invitation: { ...preview, roleWords: roleWords(preview.role), expiresAt: utcMinute(preview.expiresAt) },
      signedIn: user !== undefined,
      otherAddress: notYours === 'other-address',
      unverified: notYours === 'unverified',
      mayAccept: user !== undefined && notYours === undefined,
      encodedNext: encodeURIComponent(next),
      csrfToken: this.csrf.tokenFor(req),
      name: field(req, 'name').trim(),
      minPasswordLength: MIN_PASSWORD_LENGTH,
      allowSignup: this.config.allowSignup,
      sso,
    });
  }
}

const pageOf = (token: string) => `${ORG_INVITATION_PAGE}?token=${encodeURIComponent(token)}`;
