/**
 * The conditions a trusted issuer's token must meet for a service account (workload identity
 * federation, issue #45): claim name → pattern. A pattern is the exact value, except that `*`
 * matches any run of characters, `/` included (`repo:acme/api:ref:refs/heads/*` matches every
 * branch, `repo:acme/*` every repository of acme); every other character, `?` and `[` among them,
 * is itself. A claim that is absent, or not a string, number or boolean (an array, an object),
 * meets no condition.
 */

/** The conditions as stored: claim name → pattern. */
export type ClaimConditions = Record<string, string>;

const REGEX_SPECIALS = /[\\^$.|?+()[\]{}]/g;

/** Whether `value` matches `pattern` (`*`: any run of characters, anything else literal). */
export function globMatches(pattern: string, value: string): boolean {
  const source = pattern
    .split('*')
    .map((literal) => literal.replace(REGEX_SPECIALS, '\\$&'))
    .join('[\\s\\S]*');
  return new RegExp(`^${source}$`, 'u').test(value);
}

/** A claim's value as a condition compares it: strings as they are, numbers and booleans as JSON writes them. */
function claimText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

/** The name of the first condition `claims` fails (by claim name, so the answer is stable), or null when every one holds. */
export function failedCondition(conditions: ClaimConditions, claims: Record<string, unknown>): string | null {
  for (const name of Object.keys(conditions).sort()) {
    const value = Object.hasOwn(claims, name) ? claimText(claims[name]) : undefined;
    if (value === undefined || !globMatches(conditions[name]!, value)) return name;
  }
  return null;
}
