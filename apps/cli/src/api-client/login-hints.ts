import { DEFAULT_API_BASE_URL, ENV } from '@prospect/contract';
import { CliError, EXIT } from '../errors.js';
import type { ApiHttpError } from './api-errors.js';
import { normalizeBaseUrl } from './base-url.js';

/**
 * A 401 for the stored session's token, as one line that says why and what to
 * do. Exit 4: the user must log in again. `serviceAccount`: the client ID of a
 * service account's session (a CI token exchanged, issue #45), whose way back
 * is the exchange, never a person's login: every command's refusal says so
 * here, as the guard's line for its expiry does.
 */
export function sessionTokenRejected(
  err: ApiHttpError,
  baseUrl: string,
  options: { done?: string; env?: NodeJS.ProcessEnv; fromEnv?: boolean; serviceAccount?: string } = {},
): CliError {
  const { done, env, fromEnv, serviceAccount } = options;
  const andDone = done ? `; ${done}` : '';
  if (fromEnv) {
    // Logging in would not help: PROSPECT_TOKEN beats any session.
    if (err.tokenProblem === 'disabled') return new CliError(`Your account is disabled on ${baseUrl} — ask an administrator of that service to enable it.`, EXIT.authRequired);
    const problem = err.tokenProblem === 'unknown' || !err.tokenProblem ? 'not a valid token' : err.tokenProblem;
    return new CliError(`${baseUrl} refused the token in ${ENV.token}: it is ${problem}.`, EXIT.authRequired, `Set ${ENV.token} to a valid token, or unset it to use your session.`);
  }
  if (serviceAccount) {
    const why = {
      expired: 'has expired',
      revoked: 'was revoked (by a newer exchange, a logout, or an administrator)',
      disabled: 'belongs to a disabled service account (an administrator of its organization can enable it)',
      unknown: 'is not known to it',
    }[err.tokenProblem ?? 'unknown'];
    return new CliError(`${baseUrl} refused the token of service account ${serviceAccount}: it ${why}${andDone} — run the exchange again: \`${exchangeAgainLine(serviceAccount)}\`.`, EXIT.authRequired);
  }
  if (err.tokenProblem === 'disabled') {
    // Logging in again would not help: only an administrator can.
    return new CliError(`Your account is disabled on ${baseUrl}${andDone} — ask an administrator of that service to enable it.`, EXIT.authRequired);
  }
  const why = {
    expired: 'Your session has expired on the server',
    revoked: 'Your token was revoked (logged out elsewhere, or by an admin)',
    disabled: 'Your account is disabled',
    unknown: 'The server does not recognise your token',
  }[err.tokenProblem ?? 'unknown'];
  return new CliError(`${why} (${baseUrl})${andDone} — run \`${loginCommandLine(baseUrl, { env })}\`.`, EXIT.authRequired);
}

/**
 * The command that logs in to `baseUrl`, for every hint that says to log in
 * (`token`: with `--token -`). `--api-url` is left out only when a bare
 * `prospect auth:login` reaches that backend anyway: it is the default one, and
 * PROSPECT_API_BASE_URL (when `env` is given) does not point elsewhere. Without
 * a backend, the bare command.
 */
export function loginCommandLine(baseUrl?: string, options: { env?: NodeJS.ProcessEnv; token?: boolean } = {}): string {
  let line = 'prospect auth:login';
  if (baseUrl !== undefined) {
    const url = canonicalBaseUrl(baseUrl);
    const bare = canonicalBaseUrl(options.env?.[ENV.apiBaseUrl] || DEFAULT_API_BASE_URL);
    if (url !== DEFAULT_API_BASE_URL || url !== bare) line += ` --api-url ${shellWord(url)}`;
  }
  return options.token ? `${line} --token -` : line;
}

/** The command that exchanges a new CI token for a service account (issue #45), for the line that says its token has ended. */
export const exchangeAgainLine = (clientId: string) => `prospect auth:login --service-account ${shellWord(clientId)} --federated-token <file|-|github>`;

/** A hint never throws: a backend that is not a URL is shown as given. */
function canonicalBaseUrl(input: string): string {
  try {
    return normalizeBaseUrl(input);
  } catch {
    return input.trim();
  }
}

/** Quoted for a POSIX shell when it holds anything but plain URL characters, so the hint can be pasted as it is. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./~-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * A route of the service was not found under a base URL with a path (`https://host/prefix`): the
 * service is not served there, which is no news about device login or tokens. The hint names the
 * base the service usually has, the server's origin, with the command that logs in to it
 * (`token`: with `--token -`). Undefined for a base without a path: there a 404 means what it says.
 */
export function notServedUnderPath(baseUrl: string, route: string, status: number, options: { env?: NodeJS.ProcessEnv; token?: boolean } = {}): CliError | undefined {
  const { origin, pathname } = new URL(baseUrl);
  if (status !== 404 || pathname === '/' || pathname === '') return undefined;
  return new CliError(
    `${baseUrl} is not the base URL of a Prospect service: ${baseUrl}${route} was not found (HTTP 404).`,
    EXIT.failure,
    `Its base is usually the server's address, without a path: did you mean ${origin}? Then run \`${loginCommandLine(origin, options)}\`.`,
  );
}
