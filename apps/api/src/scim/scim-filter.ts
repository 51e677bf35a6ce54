import { type Filter, parse } from 'scim2-parse-filter';
import { invalidFilter, invalidValue } from './scim-error.js';
import type { ListQuery } from './scim-directory.repository.js';

/** The most resources one page of a list holds (RFC 7644 §3.4.2.4: the service provider's maximum). */
export const MAX_PAGE = 200;

/** A filterable attribute: the column it is, and whether it compares ignoring case (RFC 7643 `caseExact`). */
interface Filterable {
  column: string;
  caseInsensitive: boolean;
}

/** What a directory filters by (Okta: userName, Entra: userName or externalId; both: a group's displayName), by lower-cased attribute. */
export const USER_FILTERS: Record<string, Filterable> = {
  id: { column: 'id', caseInsensitive: false },
  username: { column: 'user_name', caseInsensitive: true },
  externalid: { column: 'external_id', caseInsensitive: false },
  'emails.value': { column: 'user_name', caseInsensitive: true },
  'urn:ietf:params:scim:schemas:core:2.0:user:username': { column: 'user_name', caseInsensitive: true },
};
export const GROUP_FILTERS: Record<string, Filterable> = {
  id: { column: 'id', caseInsensitive: false },
  displayname: { column: 'display_name', caseInsensitive: true },
  externalid: { column: 'external_id', caseInsensitive: false },
  'urn:ietf:params:scim:schemas:core:2.0:group:displayname': { column: 'display_name', caseInsensitive: true },
};

/**
 * A list request's `filter`, `startIndex` and `count` as a query. The filter is parsed by
 * scim2-parse-filter (RFC 7644 §3.4.2.2's grammar); this service answers the one form directories
 * send, `attribute eq "value"` on the attributes of `filterable`: anything else that parses is
 * `400 invalidFilter` naming what is supported, as is anything that does not.
 */
export function listQuery(query: Record<string, unknown>, filterable: Record<string, Filterable>): ListQuery {
  const startIndex = positiveInt(query.startIndex, 'startIndex', 1);
  const count = positiveInt(query.count, 'count', MAX_PAGE);
  return { where: whereOf(query.filter, filterable), offset: Math.max(startIndex, 1) - 1, limit: Math.min(count, MAX_PAGE) };
}

function whereOf(raw: unknown, filterable: Record<string, Filterable>): ListQuery['where'] {
  if (raw === undefined || raw === '') return null;
  if (typeof raw !== 'string') throw invalidFilter('Give one filter.');
  let filter: Filter;
  try {
    filter = parse(raw);
  } catch {
    throw invalidFilter(`The filter ${JSON.stringify(raw.slice(0, 200))} is not a SCIM filter (RFC 7644 §3.4.2.2).`);
  }
  const supported = `Supported: ${Object.keys(filterable).filter((a) => !a.includes(':')).join(', ')} with eq, e.g. userName eq "ada@example.com".`;
  if (filter.op !== 'eq' || !('attrPath' in filter) || typeof filter.compValue !== 'string') throw invalidFilter(`This filter is not supported. ${supported}`);
  const attribute = filterable[filter.attrPath.toLowerCase()];
  if (!attribute) throw invalidFilter(`The attribute ${filter.attrPath} cannot be filtered on. ${supported}`);
  return { ...attribute, value: filter.compValue };
}

/** A non-negative integer parameter (RFC 7644 §3.4.2.4: below 1 reads as 1 for startIndex, 0 is allowed for count). */
function positiveInt(raw: unknown, name: string, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = typeof raw === 'string' && /^-?\d{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n)) throw invalidValue(`${name} must be an integer.`);
  return Math.max(n, 0);
}
