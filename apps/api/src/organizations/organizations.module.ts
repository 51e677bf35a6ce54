import { Module } from '@nestjs/common';
import { UsersModule } from '../users/users.module.js';
import { InvitationsController } from './invitations.controller.js';
import { OrganizationInvitationsRepository } from './organization-invitations.repository.js';
import { OrganizationInvitationsService } from './organization-invitations.service.js';
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
  imports: [UsersModule],
  controllers: [OrganizationsController, InvitationsController],
  providers: [OrganizationInvitationsRepository, OrganizationInvitationsService, OrganizationsRepository, OrganizationDomainsRepository, OrganizationsService, OrganizationTeardown, OrgMembershipGuard],
  exports: [OrganizationInvitationsService, OrganizationsService, OrganizationTeardown, OrgMembershipGuard],
})
export class OrganizationsModule {}
