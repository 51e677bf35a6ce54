import { type CanActivate, createParamDecorator, type ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { type OrgRole, roleAtLeast } from '@prospect/contract';
import type { Request } from 'express';
import type { AuthPrincipal } from '../auth/auth-principal.js';
import { notFound } from '../common/api-exception.js';
import type { MembershipRow } from './organizations.repository.js';
import { needsRole, type OrgActor, OrganizationsService } from './organizations.service.js';

const ORG_ROLE = 'prospect:orgRole';

/** The least role a route of `/api/orgs/{slug}/…` needs (default `member`): others get 403 naming it. */
export const RequireOrgRole = (role: OrgRole, what: string) => SetMetadata(ORG_ROLE, { role, what });

type OrgRequest = Request & { user: AuthPrincipal; organization?: MembershipRow };

/**
 * The caller must be a member of the organization of the route's `:slug`, read from the database at
 * every request (no cache: a removal or a lowered role counts at the next request, on every
 * replica). An organization one is not a member of answers 404 like one that does not exist, so
 * slugs cannot be probed; a role below the route's gets 403 naming the role it needs.
 */
@Injectable()
export class OrgMembershipGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly organizations: OrganizationsService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<OrgRequest>();
    const slug = String(req.params.slug ?? '');
    const organization = await this.organizations.membership(slug, req.user.user.id, req.user.issuedAt ?? null);
    if (!organization) throw notFound(`You are not a member of an organization “${slug}”.`);
    req.organization = organization;
    const rule = this.reflector.getAllAndOverride<{ role: OrgRole; what: string } | undefined>(ORG_ROLE, [context.getHandler(), context.getClass()]);
    if (rule && !roleAtLeast(organization.role, rule.role)) needsRole(rule.role, actorOf(req), rule.what);
    return true;
  }
}

const actorOf = (req: OrgRequest): OrgActor => ({ userId: req.user.user.id, ip: req.ip ?? null, userAgent: req.get('user-agent') ?? null, organization: req.organization! });

/** The member acting in the route's organization (OrgMembershipGuard found them). */
export const Actor = createParamDecorator((_: unknown, ctx: ExecutionContext): OrgActor => actorOf(ctx.switchToHttp().getRequest<OrgRequest>()));
