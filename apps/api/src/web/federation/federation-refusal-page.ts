import { Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AuditService } from '../../audit/audit.service.js';
import { AnonymousRefusals } from '../../federation/anonymous-refusals.js';
import { FederationRefused, FederationSignIn } from '../../federation/federation-sign-in.service.js';

/**
 * How a refused sign-in through a provider ends, for the provider's pages and the linking pages
 * alike (federation-pages.controller.ts, federation-link-pages.controller.ts): a page that says why,
 * audited with the reason (`federation.login_refused`).
 */
@Injectable()
export class FederationRefusalPage {
  constructor(
    private readonly federation: FederationSignIn,
    private readonly audit: AuditService,
    private readonly anonymousRefusals: AnonymousRefusals,
  ) {}

  /**
   * A refusal as a page, audited with its reason: at once when it concerns a person or an identity
   * the provider vouched for; counted (AnonymousRefusals) when anyone could cause it for free.
   * Anything but a FederationRefused is thrown on.
   */
  async render(req: Request, res: Response, err: unknown, providerId: string, providerName?: string) {
    if (!(err instanceof FederationRefused)) throw err;
    const label = providerName ?? (await this.federation.knownProviderName(providerId)) ?? 'an unknown provider';
    if (err.identified) {
      await this.audit.record('federation.login_refused', {
        userId: err.userId,
        ip: req.ip,
        organizationId: err.organizationId,
        detail: { reason: err.reason, label, providerId: providerId.slice(0, 64), browser: req.get('user-agent')?.slice(0, 200) ?? null },
      });
    } else {
      this.anonymousRefusals.count(req.ip, providerId.slice(0, 64), err.reason, err.organizationId);
    }
    const heading = err.status === 502 ? `Sign-in with ${label} is not working` : 'Sign-in refused';
    res.status(err.status).render('sso-refused', { title: heading, heading, message: err.message });
  }
}
