import { hasUnsafeText } from '@prospect/contract';
import type { GroupMemberRow, ScimGroupRow, ScimUserFields, ScimUserRow } from './scim-directory.repository.js';
import { invalidSyntax, invalidValue } from './scim-error.js';
import { MAX_PAGE } from './scim-filter.js';

/** The schema URNs of RFC 7643 and 7644 this service speaks. */
export const SCHEMAS = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  list: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  patch: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  serviceProviderConfig: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  resourceType: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  schema: 'urn:ietf:params:scim:schemas:core:2.0:Schema',
} as const;

/** A SCIM User as this service shows it. */
export interface ScimUserResource {
  schemas: string[];
  id: string;
  externalId?: string;
  userName: string;
  name: { givenName?: string; familyName?: string; formatted?: string };
  displayName?: string;
  emails: Array<{ value: string; type: string; primary: boolean }>;
  active: boolean | string;
  meta: { resourceType: 'User'; created: Date; lastModified: Date; location: string };
}

export interface ScimGroupResource {
  schemas: string[];
  id: string;
  displayName: string;
  externalId?: string;
  members?: Array<{ value: string; display?: string; $ref?: string }>;
  meta: { resourceType: 'Group'; created: Date; lastModified: Date; location: string };
}

const defined = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as T;

export function toScimUser(row: ScimUserRow, base: string): ScimUserResource {
  const formatted = [row.givenName, row.familyName].filter(Boolean).join(' ') || undefined;
  return defined({
    schemas: [SCHEMAS.user],
    id: row.id,
    externalId: row.externalId ?? undefined,
    userName: row.userName,
    name: defined({ givenName: row.givenName ?? undefined, familyName: row.familyName ?? undefined, formatted }),
    displayName: row.displayName ?? undefined,
    emails: [{ value: row.userName, type: 'work', primary: true }],
    active: row.active,
    meta: { resourceType: 'User' as const, created: row.createdAt, lastModified: row.updatedAt, location: `${base}/Users/${row.id}` },
  });
}

export function toScimGroup(row: ScimGroupRow, members: readonly GroupMemberRow[] | undefined, base: string): ScimGroupResource {
  return defined({
    schemas: [SCHEMAS.group],
    id: row.id,
    displayName: row.displayName,
    externalId: row.externalId ?? undefined,
    members: members?.map((m) => ({ value: m.scimUserId, display: m.userName, $ref: `${base}/Users/${m.scimUserId}` })),
    meta: { resourceType: 'Group' as const, created: row.createdAt, lastModified: row.updatedAt, location: `${base}/Groups/${row.id}` },
  });
}

/** A directory's user as this service keeps it. */
export interface ScimUserInput extends ScimUserFields {
  active: boolean;
}

const MAX_TEXT = 255;
/** An address as sign-up accepts one, in short: something@a.domain, no spaces. */
const ADDRESS = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An attribute's value as the directory sent it, found ignoring case (RFC 7643 §2.1: attribute names are case-insensitive). */
function attr(body: Record<string, unknown>, name: string): unknown {
  const key = Object.keys(body).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : body[key];
}

function text(body: Record<string, unknown>, name: string, required = false): string | null {
  const value = attr(body, name);
  if (value === undefined || value === null || value === '') {
    if (required) throw invalidValue(`${name} is required.`);
    return null;
  }
  if (typeof value !== 'string') throw invalidValue(`${name} must be a string.`);
  const trimmed = value.trim();
  if (trimmed.length > MAX_TEXT) throw invalidValue(`${name} is longer than ${MAX_TEXT} characters.`);
  if (hasUnsafeText(trimmed)) throw invalidValue(`${name} contains control characters or broken Unicode.`);
  return trimmed || null;
}

/**
 * `active` as directories send it: a boolean, or (Entra ID, in a PATCH with a path) the strings
 * "True" and "False". Absent is true (a new person is active).
 */
export function activeOf(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === 'true';
  throw invalidValue('active must be true or false.');
}

/** A User body (POST, PUT, or the result of a PATCH) as the fields this service keeps. @throws ScimError 400 */
export function userInput(body: unknown): ScimUserInput {
  if (!isObject(body)) throw invalidSyntax('The body must be a SCIM User: a JSON object.');
  const userName = text(body, 'userName', true)!;
  if (!ADDRESS.test(userName)) throw invalidValue(`userName must be the person’s e-mail address; “${userName.slice(0, 100)}” is not one.`);
  const name = attr(body, 'name');
  if (name !== undefined && name !== null && !isObject(name)) throw invalidValue('name must be an object.');
  const names = isObject(name) ? name : {};
  return {
    userName: userName.toLowerCase(),
    externalId: text(body, 'externalId'),
    givenName: text(names, 'givenName'),
    familyName: text(names, 'familyName'),
    displayName: text(body, 'displayName'),
    active: activeOf(attr(body, 'active')),
  };
}

/** A Group body (POST, PUT, or the result of a PATCH): its name, externalId and members' SCIM ids. @throws ScimError 400 */
export function groupInput(body: unknown): { displayName: string; externalId: string | null; members: string[] | undefined } {
  if (!isObject(body)) throw invalidSyntax('The body must be a SCIM Group: a JSON object.');
  const displayName = text(body, 'displayName', true)!;
  const members = attr(body, 'members');
  if (members !== undefined && members !== null && !Array.isArray(members)) throw invalidValue('members must be an array.');
  const ids = (members ?? []) as unknown[];
  if (ids.length > 1000) throw invalidValue('A request may name at most 1000 members.');
  return {
    displayName,
    externalId: text(body, 'externalId'),
    members: members === undefined ? undefined : ids.map((m) => {
      const value = isObject(m) ? m.value : undefined;
      if (typeof value !== 'string' || !value) throw invalidValue('Each member must be {"value": "<a User’s id>"}.');
      return value;
    }),
  };
}

/** The person's display name for a new account: the names given, else the address's local part. */
export const accountName = (input: ScimUserInput) =>
  (input.displayName ?? [input.givenName, input.familyName].filter(Boolean).join(' ')) || input.userName.split('@')[0]!;

/** RFC 7643 §5: what this service supports, for the directory's discovery. */
export const serviceProviderConfig = (base: string) => ({
  schemas: [SCHEMAS.serviceProviderConfig],
  patch: { supported: true },
  bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
  filter: { supported: true, maxResults: MAX_PAGE },
  changePassword: { supported: false },
  sort: { supported: false },
  etag: { supported: false },
  authenticationSchemes: [
    { type: 'oauthbearertoken', name: 'OAuth Bearer Token', description: 'A SCIM token of the organization (prscim_…), made on its SCIM page.', primary: true },
  ],
  meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
});

export const resourceTypes = (base: string) => [
  { schemas: [SCHEMAS.resourceType], id: 'User', name: 'User', endpoint: '/Users', description: 'A person of the organization', schema: SCHEMAS.user, meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` } },
  { schemas: [SCHEMAS.resourceType], id: 'Group', name: 'Group', endpoint: '/Groups', description: 'A group, mapped to a role by the organization’s admins', schema: SCHEMAS.group, meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` } },
];

const attribute = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
  name, type, multiValued: false, required: false, caseExact: false, mutability: 'readWrite', returned: 'default', uniqueness: 'none', ...extra,
});

export const schemas = (base: string) => [
  {
    schemas: [SCHEMAS.schema],
    id: SCHEMAS.user,
    name: 'User',
    description: 'A person; userName is their e-mail address, in one of the organization’s verified domains.',
    attributes: [
      attribute('userName', 'string', { required: true, uniqueness: 'server', mutability: 'immutable' }),
      attribute('externalId', 'string', { caseExact: true }),
      attribute('name', 'complex', { subAttributes: [attribute('givenName', 'string'), attribute('familyName', 'string'), attribute('formatted', 'string', { mutability: 'readOnly' })] }),
      attribute('displayName', 'string'),
      attribute('emails', 'complex', { multiValued: true, mutability: 'readOnly', subAttributes: [attribute('value', 'string'), attribute('type', 'string'), attribute('primary', 'boolean')] }),
      attribute('active', 'boolean'),
    ],
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${SCHEMAS.user}` },
  },
  {
    schemas: [SCHEMAS.schema],
    id: SCHEMAS.group,
    name: 'Group',
    description: 'A group of the directory; the organization’s admins map its displayName to a role.',
    attributes: [
      attribute('displayName', 'string', { required: true, uniqueness: 'server' }),
      attribute('externalId', 'string', { caseExact: true }),
      attribute('members', 'complex', { multiValued: true, subAttributes: [attribute('value', 'string', { mutability: 'immutable' }), attribute('display', 'string', { mutability: 'readOnly' })] }),
    ],
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${SCHEMAS.group}` },
  },
];
