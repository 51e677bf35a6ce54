import { Injectable } from '@nestjs/common';
import { type Organization, roleAtLeast } from '@prospect/contract';
import type { Request, Response } from 'express';
import { ApiException } from '../../common/api-exception.js';
import { ORG_PAGE_PREFIX, type OrgActor, OrganizationsService } from '../../organizations/organizations.service.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { sessionIssuedAt } from '../../web-sessions/web-account.js';
import { accountOf, SignInAgain } from '../page-guards.js';

/** The tabs of an organization's admin pages (views/partials/org-tabs.hbs). */
export type OrgTab = 'overview' | 'invitations' | 'domains' | 'identityProviders' | 'saml' | 'serviceAccounts' | 'webhooks' | 'scim';

/**
 * What every admin page of an organization (invitations, domains, identity providers, SAML,
 * service accounts, webhooks, SCIM) asks first: is the signed-in person an admin or owner of it, read now. The
 * rule is OrgMembershipGuard's, worded as pages: 404 alike for no such organization and not a
 * member, 403 naming who may for a member.
 */
@Injectable()
export class OrgAdminPages {
  constructor(
    private readonly organizations: OrganizationsService,
    private readonly csrf: CsrfService,
  ) {}

  /**
   * The signed-in person as an admin or owner of the organization of `slug`; otherwise the page
   * that says why is sent and undefined answered.
   * @param what what the page manages, for the refusal ("its domains")
   */
  async adminOf(req: Request, res: Response, slug: string, what: string): Promise<OrgActor | undefined> {
    const organization = await this.memberOf(req, slug);
    if (!organization || !roleAtLeast(organization.role, 'admin')) {
      const heading = organization ? 'Admins only' : 'No such organization';
      const message = organization ? `Only an admin or an owner of “${organization.name}” may manage ${what}; you are a member.` : `You are not a member of an organization “${slug}”.`;
      res.status(organization ? 403 : 404).render('error', { title: heading, heading, message, account: accountOf(req, this.csrf) });
      return undefined;
    }
    return { userId: req.webUser!.id, ip: req.ip ?? null, organization };
  }

  /**
   * The organization of `slug` as this browser's session acts for it, read now; undefined when there
   * is none or the person is not a member. A member who left it after this session signed in (a
   * member again since) gets the page that says to sign in again: a departure ends the sessions
   * signed in before it, as it ends the tokens issued before it (docs/organizations.md).
   * @throws SignInAgain
   */
  async memberOf(req: Request, slug: string): Promise<Organization | undefined> {
    const found = await this.organizations.membershipAsOf(slug, req.webUser!.id, sessionIssuedAt(req));
    if (found?.predatesDeparture) throw new SignInAgain(found.organization.name, orgPagePath(found.organization.slug));
    return found?.organization;
  }

  /** What every admin page of an organization renders around its own part: the header's account, the organization, its tabs. */
  frame(req: Request, org: OrgActor['organization'], tab: OrgTab) {
    return { account: accountOf(req, this.csrf), org, orgPath: orgPagePath(org.slug), orgTab: orgTabs(org.slug, tab), wide: true, onOrgs: true };
  }
}

/** The path of an organization's page: `sub` below it (`domains`, `scim?done=saved`…), or its overview. */
export const orgPagePath = (slug: string, sub = '') => `${ORG_PAGE_PREFIX}/${encodeURIComponent(slug)}${sub ? `/${sub}` : ''}`;

/**
 * Post/redirect/get for an admin page's form: runs `change`; a refusal the service words (an
 * ApiException, a 503 included) is shown on the page by `showRefusal` with its status; done, a 303
 * to `to`, so a reload does not send the form again.
 */
export async function changeThenRedirect(res: Response, to: string, change: () => Promise<unknown>, showRefusal: (status: number, message: string) => unknown): Promise<unknown> {
  try {
    await change();
  } catch (err) {
    if (err instanceof ApiException) return showRefusal(err.getStatus(), err.message);
    throw err;
  }
  res.redirect(303, to);
  return undefined;
}

/** The tabs partial's data for an admin's page of the organization `slug`, with `tab` current. */
export const orgTabs = (slug: string, tab: OrgTab) => ({ slug, manages: true, [tab]: true });
