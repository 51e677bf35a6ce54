import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { InvitationsController } from './invitations.controller.js';
import { OrganizationInvitationsRepository } from './organization-invitations.repository.js';
import { OrganizationInvitationsService } from './organization-invitations.service.js';
import { DomainsController } from './domains.controller.js';
import { DomainTxtLookup } from './domain-txt-lookup.js';
import { OrganizationDomainsService } from './organization-domains.service.js';
import { OrganizationJoinRequestsRepository } from './organization-join-requests.repository.js';
import { OrganizationDomainsRepository } from './organization-domains.repository.js';
import { OrgMembershipGuard } from './org-membership.guard.js';
import { OrganizationTeardown } from './organization-teardown.js';
import { OrganizationsController } from './organizations.controller.js';
import { OrganizationsRepository } from './organizations.repository.js';
import { OrganizationsService } from './organizations.service.js';

/**
 * Organizations (issue #44): the teams people belong to, with one role each, and what an
 * organization owns (invitations, domains; identity providers are federation/'s, attached through
 * OrganizationTeardown). Owns `organizations`, `organization_members`, `organization_invitations`,
 * `organization_domains` and `organization_join_requests`.
 */
@Module({
  imports: [UsersModule],
  // DomainsController first: its `GET /api/orgs/joinable` must be matched before `GET /api/orgs/:slug`.
  controllers: [DomainsController, OrganizationsController, InvitationsController],
  providers: [OrganizationsRepository, OrganizationDomainsRepository, OrganizationsService, OrganizationTeardown, OrgMembershipGuard,
    OrganizationInvitationsRepository, OrganizationInvitationsService, OrganizationDomainsService, OrganizationJoinRequestsRepository, DomainTxtLookup],
  exports: [OrganizationsService, OrganizationTeardown, OrgMembershipGuard, OrganizationInvitationsService, OrganizationDomainsService],
})
export class OrganizationsModule {}
