import { CLI_SCOPES, type Scope } from '@prospect/contract';
import { usageError } from '../errors.js';

/**
 * `--scopes profile,tokens,admin` (commas or spaces), each one the CLI may ask for, in the
 * registry's order; undefined without the flag, which leaves the server's default (CLI_DEFAULT_SCOPES).
 * `allowed`: what this login may ask for (a service account's: SERVICE_ACCOUNT_SCOPES).
 */
export function parseScopesFlag<S extends string = Scope>(value: unknown, allowed: readonly S[] = CLI_SCOPES as readonly string[] as readonly S[]): S[] | undefined {
  if (value === undefined) return undefined;
  const names = typeof value === 'string' ? value.split(/[\s,]+/).filter(Boolean) : [];
  const unknown = names.filter((name) => !allowed.includes(name as S));
  if (!names.length || unknown.length) {
    const what = names.length ? `unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.map((name) => JSON.stringify(name)).join(', ')}` : 'no scope';
    throw usageError(`--scopes takes a comma-separated list of ${allowed.join(', ')}; got ${what}.`, `For example: --scopes ${allowed.join(',')}`);
  }
  return allowed.filter((scope) => names.includes(scope));
}
