import type { SessionFile } from '@prospect/contract';
import type { CommandContext } from '../context.js';
import { usageError } from '../errors.js';
import { type CredentialStore, inKeychain } from '../session/kept-secrets.js';
import type { FlagSpec } from './command.js';

/** The environment's say in where a login keeps its tokens: `keychain` or `file`. */
export const CREDENTIAL_STORE_ENV = 'PROSPECT_CREDENTIAL_STORE';

/**
 * No default: absent, `--no-secure-storage` and `--secure-storage` are three different answers
 * (cli.ts leaves a boolean flag without a default undefined when it is not given).
 */
export const secureStorageFlag: Record<string, FlagSpec> = { secureStorage: { type: 'boolean' } };

/**
 * Where a login keeps the session's tokens. `--secure-storage` (or `--no-secure-storage`) beats
 * PROSPECT_CREDENTIAL_STORE; without either, a new login of an account keeps them where its
 * previous session had them (`existing`), so logging in again never moves them out of the
 * keychain unasked; else the session file, the contract's default.
 */
export function chooseCredentialStore(ctx: Pick<CommandContext, 'flags' | 'env'>, existing: SessionFile | undefined): CredentialStore {
  return requestedCredentialStore(ctx) ?? (existing && inKeychain(existing) ? 'keychain' : 'file');
}

/** What the flag or the environment asks for, if anything; a value of the variable that is neither is a usage error. */
export function requestedCredentialStore(ctx: Pick<CommandContext, 'flags' | 'env'>): CredentialStore | undefined {
  const flag = ctx.flags.secureStorage;
  if (typeof flag === 'boolean') return flag ? 'keychain' : 'file';
  const raw = ctx.env[CREDENTIAL_STORE_ENV];
  const value = raw?.trim().toLowerCase();
  if (!value) return undefined;
  if (value === 'keychain' || value === 'file') return value;
  throw usageError(`${CREDENTIAL_STORE_ENV} must be keychain or file, not ${JSON.stringify(raw)}.`, `Or pass --secure-storage (the OS keychain) or --no-secure-storage (the session file) to auth:login.`);
}
