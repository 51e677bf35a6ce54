import type { OrgRole } from '@prospect/contract';
import type { AuthEventType } from '../../audit/auth-event.entity.js';

/** A role in a sentence. */
export const ROLE_WORDS: Record<OrgRole, string> = { owner: 'owner', admin: 'admin', member: 'member' };

/** How someone joined (OrganizationsService.addMember's `via`), in words; a way not listed here is shown as it is. */
function viaWords(via: string): string {
  if (via === 'invitation') return 'by invitation';
  if (via === 'join_request') return 'by a request an admin approved';
  if (via === 'scim') return 'through the directory (SCIM)';
  if (via.startsWith('domain:')) return `through the verified domain ${via.slice('domain:'.length)}`;
  return `(${via})`;
}

/** A domain's settings (OrganizationDomainsService's `org.domain_update` detail) in words. */
const JOIN_WORDS: Record<string, string> = {
  invite: 'people join by invitation only',
  request: 'people of the domain may ask to join',
  auto: 'people of the domain join at once',
};
function domainChange(d: Record<string, unknown>): string {
  const parts = [
    typeof d.joinPolicy === 'string' ? (JOIN_WORDS[d.joinPolicy] ?? `join policy ${d.joinPolicy}`) : undefined,
    d.enforceSso === true ? 'sign-in only through the organization’s identity provider' : d.enforceSso === false ? 'sign-in no longer enforced' : undefined,
  ].filter(Boolean);
  return parts.length ? `: ${parts.join(', ')}` : '';
}

type Detail = Record<string, unknown>;
const text = (detail: Detail, key: string): string | undefined => (typeof detail[key] === 'string' ? (detail[key] as string) : undefined);
const role = (detail: Detail, key: string): string => {
  const value = text(detail, key);
  return value && value in ROLE_WORDS ? ROLE_WORDS[value as OrgRole] : (value ?? 'a role');
};

/**
 * Each event of an organization's log in words, given who a member id is (`memberName`). The
 * details are what OrganizationsService and the modules that record in the organization's log
 * (invitations, domains, identity providers) put in `detail`; a key that is missing reads as a
 * generic word rather than failing the page.
 */
const WORDS: Partial<Record<AuthEventType, (detail: Detail, member: (id: unknown) => string) => string>> = {
  'org.create': (d) => `Created the organization${text(d, 'slug') ? ` at /orgs/${text(d, 'slug')}` : ''}`,
  'org.rename': (d) => `Renamed it “${text(d, 'name') ?? '?'}”`,
  'org.delete': () => 'Deleted the organization',
  'org.member_add': (d, member) => {
    const via = text(d, 'via');
    return `${member(d.memberId)} joined as ${role(d, 'role')}${via ? ` ${viaWords(via)}` : ''}`;
  },
  'org.member_role': (d, member) => `Changed ${member(d.memberId)}’s role from ${role(d, 'from')} to ${role(d, 'to')}${text(d, 'via') === 'scim' ? ' (the directory’s groups)' : ''}`,
  'org.member_remove': (d, member) =>
    `Removed ${member(d.memberId)} (${role(d, 'role')})${text(d, 'reason') === 'account deleted' ? ': their account was deleted' : text(d, 'via') === 'scim' ? ' through the directory (SCIM)' : ''}`,
  'org.member_leave': (d) => `Left the organization (was ${role(d, 'role')})`,
  'org.invitation_create': (d) => `Invited ${text(d, 'email') ?? 'someone'}${text(d, 'role') ? ` as ${role(d, 'role')}` : ''}`,
  'org.invitation_revoke': (d) => `Revoked the invitation of ${text(d, 'email') ?? 'someone'}`,
  'org.invitation_accept': (d) => `Accepted the invitation${text(d, 'role') ? ` as ${role(d, 'role')}` : ''}`,
  'org.domain_add': (d) => `Added the domain ${text(d, 'domain') ?? ''}`.trimEnd(),
  'org.domain_verify': (d) => `Verified the domain ${text(d, 'domain') ?? ''}`.trimEnd(),
  'org.domain_update': (d) => `Changed the domain ${text(d, 'domain') ?? ''}`.trimEnd() + domainChange(d),
  'org.domain_remove': (d) =>
    `Removed the domain ${text(d, 'domain') ?? ''}`.trimEnd() + (typeof d.sessions === 'number' && d.sessions > 0 ? `, ending ${d.sessions} browser session${d.sessions === 1 ? '' : 's'} its identity provider had signed in` : ''),
  'org.identity_provider_create': (d) => `Added the identity provider ${provider(d)}`.trimEnd(),
  'org.identity_provider_update': (d) =>
    `${d.disabled === true ? 'Disabled' : d.disabled === false ? 'Enabled' : 'Changed'} the identity provider ${provider(d)}`.trimEnd(),
  'org.identity_provider_delete': (d) => `Deleted the identity provider ${provider(d)}${text(d, 'reason') ? ` (${text(d, 'reason')})` : ''}`.trimEnd(),
  'org.service_account_create': (d) => `Created the service account ${text(d, 'name') ?? ''}`.trimEnd(),
  'org.service_account_update': (d) =>
    `${d.disabled === true ? 'Disabled' : d.disabled === false ? 'Enabled' : 'Changed'} the service account ${text(d, 'name') ?? ''}`.trimEnd() +
    (typeof d.scopes === 'string' ? ` (scopes: ${d.scopes || 'none'})` : ''),
  'org.service_account_delete': (d) => `Deleted the service account ${text(d, 'name') ?? ''}${text(d, 'reason') ? ` (${text(d, 'reason')})` : ''}`.trimEnd(),
  'org.service_account_secret_create': (d) => `Created a secret of the service account ${text(d, 'name') ?? ''}`.trimEnd(),
  'org.service_account_secret_delete': (d) => `Deleted a secret of the service account ${text(d, 'name') ?? ''}`.trimEnd(),
  'org.service_account_key_add': (d) => `Added the key ${text(d, 'kid') ?? ''} to the service account ${text(d, 'name') ?? ''}`.replace('  ', ' ').trimEnd(),
  'org.service_account_key_delete': (d) => `Deleted the key ${text(d, 'kid') ?? ''} of the service account ${text(d, 'name') ?? ''}`.replace('  ', ' ').trimEnd(),
  'org.webhook_create': (d) => `Added the webhook ${text(d, 'origin') ?? ''}`.trimEnd(),
  'org.webhook_update': (d) => `Changed the webhook ${text(d, 'origin') ?? ''}${d.disabled === true ? ' (disabled)' : d.disabled === false ? ' (enabled)' : ''}`.replace('  ', ' '),
  'org.webhook_secret_rotate': (d) => `Rotated the secret of the webhook ${text(d, 'origin') ?? ''}`.trimEnd(),
  'org.webhook_delete': (d) => `Deleted the webhook ${text(d, 'origin') ?? ''}`.trimEnd(),
  'org.webhook_disable_failing': (d) => `The webhook ${text(d, 'origin') ?? ''} was disabled after failing for 3 days`.replace('  ', ' '),
  'org.service_account_new_address': (d) => `The service account ${text(d, 'name') ?? ''} was used from a new address${text(d, 'address') ? ` (${text(d, 'address')})` : ''}`,
  'org.service_account_federation_add': (d) => `Trusted ${text(d, 'issuer') ?? 'an issuer'} for the service account ${text(d, 'name') ?? ''}`.trimEnd(),
  'org.service_account_federation_delete': (d) =>
    `Stopped trusting ${text(d, 'issuer') ?? 'an issuer'} for the service account ${text(d, 'name') ?? ''}`.trimEnd() +
    (typeof d.tokens === 'number' && d.tokens > 0 ? `, ending ${d.tokens} token${d.tokens === 1 ? '' : 's'} exchanged through it` : ''),
  'org.service_account_token_exchange': (d) =>
    `The service account ${text(d, 'name') ?? ''} was given a token for ${text(d, 'sub') ?? 'a token'} of ${text(d, 'issuer') ?? 'a trusted issuer'}`.replace('  ', ' '),
  'org.service_account_exchange_refused': (d) =>
    `Refused a token of ${text(d, 'issuer') ?? 'an issuer'}${text(d, 'sub') ? ` for ${text(d, 'sub')}` : ''} for the service account ${text(d, 'name') ?? ''}: ${text(d, 'condition') ?? 'unknown'} failed`.replace('  ', ' '),
  'scim.token_create': (d) => `Created the SCIM token “${text(d, 'label') ?? ''}”`,
  'scim.token_revoke': (d) => `Revoked the SCIM token “${text(d, 'label') ?? ''}”`,
  'scim.settings_update': (d) =>
    'Changed SCIM provisioning' +
    [
      d.deactivateDisablesAccount === true ? ': a deactivation disables the account of a person in no other organization' : d.deactivateDisablesAccount === false ? ': a deactivation ends the membership only' : '',
      text(d, 'groupRoles') ? `; groups to roles: ${text(d, 'groupRoles')}` : '',
    ].join(''),
  'scim.user_provision': (d, member) => `The directory provisioned ${member(d.memberId)}${d.linked === true ? ' (an existing account)' : ''}`,
  'scim.user_update': (d, member) => `The directory updated ${member(d.memberId)}`,
  'scim.user_deactivate': (d, member) => `The directory deactivated ${member(d.memberId)}${d.accountDisabled === true ? ', and disabled their account' : ''}`,
  'scim.user_reactivate': (d, member) => `The directory reactivated ${member(d.memberId)}${d.accountEnabled === true ? ', and enabled their account again' : ''}`,
  'scim.user_delete': (d, member) => `The directory deprovisioned ${member(d.memberId)}${d.accountDisabled === true ? ' (their account stays disabled)' : ''}`,
  'scim.group_create': (d) => `The directory created the group ${text(d, 'displayName') ?? ''}${text(d, 'role') ? ` (mapped to ${role(d, 'role')})` : ''}`,
  'scim.group_update': (d) => `The directory changed the group ${text(d, 'displayName') ?? ''}`,
  'scim.group_delete': (d) => `The directory deleted the group ${text(d, 'displayName') ?? ''}`,
};

const provider = (d: Detail) => text(d, 'label') ?? text(d, 'displayName') ?? text(d, 'name') ?? '';

/** The member ids an event names (to look their addresses up before describing it). */
export function memberIdsOf(event: { detail: Detail }): string[] {
  return typeof event.detail.memberId === 'string' ? [event.detail.memberId] : [];
}

/** One line of the organization's log: what happened, in words. */
export function describeOrgEvent(event: { type: AuthEventType; detail: Detail }, addresses: ReadonlyMap<string, string>): string {
  const member = (id: unknown) => (typeof id === 'string' && addresses.get(id)) || 'a deleted account';
  return WORDS[event.type]?.(event.detail ?? {}, member) ?? event.type;
}
