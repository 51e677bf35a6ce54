import { Module } from '@nestjs/common';
import { OrganizationDomainsRepository } from './organization-domains.repository.js';
import { OrgMembershipGuard } from './org-membership.guard.js';
import { OrganizationTeardown } from './organization-teardown.js';
import { OrganizationsController } from './organizations.controller.js';
import { OrganizationsRepository } from './organizations.repository.js';
import { OrganizationsService } from './organizations.service.js';

/**
 * Organizations (issue #44): the teams people belong to, with one role each, and what an
 * organization owns (invitations, domains; identity providers are federation/'s, attached through
 * OrganizationTeardown). Owns `organizations`, `organization_members`, `organization_invitations`
 * and `organization_domains`.
 */
@Module({
  controllers: [OrganizationsController],
  providers: [OrganizationsRepository, OrganizationDomainsRepository, OrganizationsService, OrganizationTeardown, OrgMembershipGuard],
  exports: [OrganizationsService, OrganizationTeardown, OrgMembershipGuard],
})
export class OrganizationsModule {}
