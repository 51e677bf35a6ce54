import { OrganizationsService } from '../../src/organizations/organizations.service.js';
import type { TestApp } from './test-app.js';

/*
 * SQL: a domain is verified through DNS (organizations/'s domains, with a DNS server of the test's
 * own), which the specs of identity providers per organization do not run; they need a domain in
 * the state a verification leaves (verified now, enforced or not) and then gone, as its removal or
 * another organization's claim leaves it. These write those states of `organization_domains`
 * directly, in one place, so a change of its schema is mended here.
 */

/** The organization's id, as its owner (or any member) sees it. */
export async function organizationId(api: TestApp, slug: string, memberId: string): Promise<string> {
  const org = await api.app.get(OrganizationsService).membership(slug, memberId, null);
  if (!org) throw new Error(`${memberId} is not a member of ${slug}`);
  return org.id;
}

/** Marks `domain` verified by the organization now, as a successful DNS verification does, with `enforceSso` as told. */
export async function markDomainVerified(api: TestApp, orgId: string, domain: string, options: { enforceSso?: boolean } = {}): Promise<void> {
  await api.dataSource.query(
    `INSERT INTO organization_domains (organization_id, domain, verification_token, verified_at, enforce_sso, created_at)
     VALUES ($1, $2, 'set-by-a-test-fixture', now(), $3, now())
     ON CONFLICT (organization_id, domain) DO UPDATE SET verified_at = now(), enforce_sso = EXCLUDED.enforce_sso`,
    [orgId, domain, options.enforceSso ?? false],
  );
}

/** Removes the organization's domain, as an admin's removal does. */
export async function removeDomain(api: TestApp, orgId: string, domain: string): Promise<void> {
  await api.dataSource.query(`DELETE FROM organization_domains WHERE organization_id = $1 AND domain = $2`, [orgId, domain]);
}
