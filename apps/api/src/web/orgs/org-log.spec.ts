import { describeOrgEvent } from './org-log.js';
import { suggestSlug } from './suggest-slug.js';

describe('suggestSlug', () => {
  it.each([
    ['Acme Sales', 'acme-sales'],
    ['  Ünïcode Sales & Co  ', 'unicode-sales-co'],
    ['---', ''],
    ['Ça va', 'ca-va'],
    ['x'.repeat(39) + ' y', 'x'.repeat(39)], // cut at 40, no hyphen left at the end
  ])('%s → %s', (name, slug) => expect(suggestSlug(name)).toBe(slug));
});

describe('describeOrgEvent', () => {
  const addresses = new Map([['u1', 'ada@example.com']]);
  it.each([
    [{ type: 'org.member_role', detail: { memberId: 'u1', from: 'member', to: 'admin' } }, 'Changed ada@example.com’s role from member to admin'],
    [{ type: 'org.member_remove', detail: { memberId: 'gone', role: 'member' } }, 'Removed a deleted account (member)'],
    [{ type: 'org.member_remove', detail: { memberId: 'gone', role: 'admin', reason: 'account deleted' } }, 'Removed a deleted account (admin): their account was deleted'],
    [{ type: 'org.member_add', detail: { memberId: 'u1', role: 'member', via: 'invitation' } }, 'ada@example.com joined as member by invitation'],
    [{ type: 'org.member_add', detail: { memberId: 'u1', role: 'member', via: 'domain:example.com' } }, 'ada@example.com joined as member through the verified domain example.com'],
    [{ type: 'org.invitation_accept', detail: { email: 'ada@example.com', role: 'admin' } }, 'Accepted the invitation as admin'],
    [{ type: 'org.invitation_create', detail: { email: 'bo@example.com', role: 'admin' } }, 'Invited bo@example.com as admin'],
    [{ type: 'org.domain_verify', detail: { domain: 'example.com' } }, 'Verified the domain example.com'],
    [{ type: 'org.domain_update', detail: { domain: 'example.com', joinPolicy: 'auto', enforceSso: true } }, 'Changed the domain example.com: people of the domain join at once, sign-in only through the organization’s identity provider'],
    [{ type: 'org.identity_provider_create', detail: { label: 'Okta' } }, 'Added the identity provider Okta'],
    [{ type: 'org.identity_provider_update', detail: { label: 'Okta', disabled: true } }, 'Disabled the identity provider Okta'],
    [{ type: 'org.identity_provider_delete', detail: { label: 'Okta', reason: 'organization deleted' } }, 'Deleted the identity provider Okta (organization deleted)'],
    [{ type: 'org.member_add', detail: { memberId: 'u1', role: 'member', via: 'scim' } }, 'ada@example.com joined as member through the directory (SCIM)'],
    [{ type: 'scim.user_deactivate', detail: { memberId: 'u1', accountDisabled: true } }, 'The directory deactivated ada@example.com, and disabled their account'],
    [{ type: 'scim.settings_update', detail: { groupRoles: 'Admins → admin' } }, 'Changed SCIM provisioning; groups to roles: Admins → admin'],
    [{ type: 'org.service_account_federation_delete', detail: { issuer: 'https://ci.example', name: 'deploy', tokens: 2 } }, 'Stopped trusting https://ci.example for the service account deploy, ending 2 tokens exchanged through it'],
    [{ type: 'org.service_account_federation_delete', detail: { issuer: 'https://ci.example', name: 'deploy', tokens: 0 } }, 'Stopped trusting https://ci.example for the service account deploy'],
    [{ type: 'web.login', detail: {} }, 'web.login'],
  ] as const)('%j', (event, words) => expect(describeOrgEvent(event, addresses)).toBe(words));
});
