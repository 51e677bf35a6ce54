import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { SecondFactorsService } from '../accounts/second-factors.service.js';
import { AppConfig } from '../config/app-config.js';
import { CsrfService } from '../web-sessions/csrf.service.js';

/** Why the person is asked, by the page they were on. */
function reasonFor(returnTo: string): string {
  if (returnTo.startsWith('/device')) return 'Approving a sign-in gives a program access to your account.';
  if (returnTo.startsWith('/settings/tokens')) return 'A new token gives access to your account.';
  if (returnTo.startsWith('/admin')) return 'Administrators confirm who they are before changing anything.';
  return 'This changes how you sign in.';
}

/** The "Confirm it's you" page of sudo mode, shown in place of the page that asked for it. */
@Injectable()
export class SudoPages {
  constructor(
    private readonly factors: SecondFactorsService,
    private readonly csrf: CsrfService,
    private readonly config: AppConfig,
  ) {}

  async render(req: Request, res: Response, status: number, next: string, error?: string): Promise<void> {
    const account = { user: req.webUser!, csrfToken: this.csrf.tokenFor(req), isAdmin: req.webUser!.role === 'admin' };
    res.status(status).render('sudo', {
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
