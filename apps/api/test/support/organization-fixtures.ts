import type { OrgRole, Scope } from '@prospect/contract';
import { OrganizationsService } from '../../src/organizations/organizations.service.js';
import { TokensService } from '../../src/tokens/tokens.service.js';
import { createUser } from './fixtures.js';
import { request } from './http.js';
import type { TestApp } from './test-app.js';

let counter = 0;

/** A token of `userId` with `scope` (default: profile and orgs), as a CLI session would have. */
export async function orgsToken(api: TestApp, userId: string, scope: readonly Scope[] = ['profile', 'orgs']): Promise<string> {
  return (await api.app.get(TokensService).issue({ userId, origin: 'direct', scope: scope.join(' ') })).accessToken;
}

/** A person with an `orgs` token. */
export async function personWithToken(api: TestApp, overrides: Parameters<typeof createUser>[1] = {}) {
  const user = await createUser(api, overrides);
  return { ...user, token: await orgsToken(api, user.id) };
}

/** A new organization owned by `owner`, created through the API; its slug. */
export async function createOrganization(api: TestApp, owner: { token: string }, name = 'Acme Sales'): Promise<string> {
  counter += 1;
  const slug = `acme-${counter}-${Date.now().toString(36)}`;
  const res = await request(api, 'POST', '/api/orgs', { json: { name, slug }, token: owner.token });
  if (res.status !== 201) throw new Error(`creating ${slug}: ${res.status} ${JSON.stringify(res.body)}`);
  return slug;
}

/** Adds `user` to the organization of `slug` with `role`, as an accepted invitation does. */
export async function addMember(api: TestApp, slug: string, ownerId: string, user: { id: string }, role: OrgRole): Promise<void> {
  const organizations = api.app.get(OrganizationsService);
  const org = (await organizations.membership(slug, ownerId, null))!;
  await organizations.addMemberNow(org.id, user.id, role, 'test');
}
