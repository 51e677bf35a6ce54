import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { SecondFactorsService } from '../accounts/second-factors.service.js';
import { AppConfig } from '../config/app-config.js';
import { CsrfService } from '../web-sessions/csrf.service.js';
import { FederationPolicy } from '../federation/federation-policy.js';
import { RECONFIRMATION_SECONDS } from '../auth/sudo-rule.js';
import { UsersService } from '../users/users.service.js';

/** Why the person is asked, by the page they were on. */
function reasonFor(returnTo: string): string {
  if (returnTo.startsWith('/device')) return 'Approving a sign-in gives a program access to your account.';
  if (returnTo.startsWith('/settings/tokens')) return 'A new token gives access to your account.';
  if (returnTo.startsWith('/admin')) return 'Administrators confirm who they are before changing anything.';
  if (returnTo.startsWith('/orgs/')) return 'Deleting an organization ends everything it owns, for every member.';
  if (returnTo.startsWith('/oauth/authorize')) return 'Approving an app gives it access to your account.';
  return 'This changes how you sign in.';
}

/** The "Confirm it's you" page of sudo mode, shown in place of the page that asked for it. */
@Injectable()
export class SudoPages {
  constructor(
    private readonly factors: SecondFactorsService,
    private readonly csrf: CsrfService,
    private readonly config: AppConfig,
    private readonly federation: FederationPolicy,
    private readonly users: UsersService,
  ) {}

  /**
   * The page. A person linked to identity providers may confirm there instead (a fresh sign-in:
   * `prompt=login`, `max_age=0`); one whose domain a provider enforces confirms only there, and one
   * without a password there or with an app code. Asked by the account page (a person without a
   * password changing how they sign in), the confirmation counts for RECONFIRMATION_SECONDS only.
   */
  async render(req: Request, res: Response, status: number, next: string, error?: string): Promise<void> {
    const account = { user: req.webUser!, csrfToken: this.csrf.tokenFor(req), isAdmin: req.webUser!.role === 'admin' };
    const [linked, enforcing, hasPassword] = await Promise.all([
      this.federation.linkedProviders(req.webUser!.id),
      this.federation.enforcingProviderFor(req.webUser!.email),
      this.users.hasPassword(req.webUser!.id),
    ]);
    res.status(status).render('sudo', {
      providers: linked.map((p) => ({ displayName: p.displayName, href: `/sudo/sso/${p.id}?next=${encodeURIComponent(next)}` })),
      passwordRefused: enforcing !== undefined,
      hasPassword,
      forAccountChange: next.startsWith('/settings/account'),
      reconfirmationMinutes: Math.round(Math.min(RECONFIRMATION_SECONDS, this.config.sudoSeconds) / 60),
      title: 'Confirm it’s you',
      account,
      next,
      error,
      why: reasonFor(next),
      hasTotp: await this.factors.hasTotp(req.webUser!.id),
      hours: Math.round((this.config.sudoSeconds / 3600) * 10) / 10,
    });
  }
}
