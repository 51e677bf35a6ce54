import { DEFAULT_API_BASE_URL, ENV, type SessionFile } from '@prospect/contract';
import { normalizeBaseUrl } from '../api-client/base-url.js';
import { exchangeAgainLine, loginCommandLine } from '../api-client/login-hints.js';
import { type CommandContext, envToken, requestedApiUrl, writeLine } from '../context.js';
import { serverClockOf } from '../session/session-context.js';
import { authRequired, type CliError } from '../errors.js';
import { refreshSession } from '../session/refresh.js';
import { AccountsFile } from '../session/accounts-file.js';
import type { SessionRead } from '../session/session-store.js';
import { serviceAccountOf } from '../session/kept-secrets.js';
import { actFor, requestedOrg } from './organization-choice.js';

/**
 * No usable session file: none at all, or one that is corrupt, partial or wrongly typed.
 * The hint logs in to the backend asked for (--api-url, PROSPECT_API_BASE_URL), if any;
 * one that is not a URL is a usage error first.
 */
export function notLoggedIn(read: Exclude<SessionRead, { kind: 'session' }>, ctx: Pick<CommandContext, 'flags' | 'env'>): CliError {
  const asked = requestedApiUrl(ctx);
  const login = loginCommandLine(asked === undefined ? undefined : normalizeBaseUrl(asked), { env: ctx.env });
  return read.kind === 'none' ? authRequired(`Not logged in — run \`${login}\`.`) : authRequired(`Not logged in: ${read.reason} — run \`${login}\`.`);
}

/**
 * The one guard in front of every command that needs a session (seed §3.2):
 * refuses before the command's own code runs when there is no usable session.
 * Returns the session, or undefined when PROSPECT_SKIP_AUTH=1 bypasses it.
 */
export async function requireSession(ctx: CommandContext): Promise<SessionFile | undefined> {
  // A --org that is not a slug is a usage error, before the session is read or renewed.
  requestedOrg(ctx);
  const token = envToken(ctx);
  if (token) {
    // PROSPECT_TOKEN beats the session file; the server checks it on every request.
    ctx.credentials = { accessToken: token, apiBaseUrl: normalizeBaseUrl(requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL), source: 'env' };
    actFor(ctx, ctx.credentials.apiBaseUrl, undefined);
    return undefined;
  }
  const session = await requireFileSession(ctx);
  if (session) {
    ctx.credentials = { accessToken: session.accessToken, apiBaseUrl: session.apiBaseUrl, source: 'file', serviceAccount: serviceAccountOf(session)?.clientId };
    // From here every request of the command to its server says which organization it acts for.
    actFor(ctx, session.apiBaseUrl, session);
  }
  return session;
}

async function requireFileSession(ctx: CommandContext): Promise<SessionFile | undefined> {
  const read = await ctx.store.read();
  const asked = requestedApiUrl(ctx);
  const isForAnotherBackend = (session: SessionFile) => asked !== undefined && normalizeBaseUrl(asked) !== normalizeBaseUrl(session.apiBaseUrl);
  if (ctx.env[ENV.skipAuth] === '1') {
    writeLine(ctx.stderr, `warning: ${ENV.skipAuth}=1 — skipping the login check (for tests and local development only)`);
    // Still never hand a token to a backend it was not issued by.
    return read.kind === 'session' && !isForAnotherBackend(read.session) ? read.session : undefined;
  }
  if (read.kind !== 'session') throw notLoggedIn(read, ctx);
  let { session } = read;
  // The backend first: an expired session for another backend than the one asked for
  // must say to log in to the one asked for (and its refresh token goes nowhere else).
  await refuseOtherBackend(ctx, session);
  // Expired or about to, by the server's clock: renewed with its refresh token before the command runs.
  const { session: current, refreshed } = await refreshSession(ctx, session);
  session = current;
  // A pair the server has just issued is fresh whatever the clocks say; any other is judged by the server's time.
  if (!refreshed && Date.parse(session.expiresAt) <= (await serverClockOf(ctx).now(session.apiBaseUrl))) {
    throw sessionExpired(session, ctx);
  }
  return session;
}

/**
 * An expired session, in one line with what to run. A service account's (a CI token exchanged,
 * issue #45) has no refresh token by design: the job exchanges a new CI token.
 */
export function sessionExpired(session: SessionFile, ctx: Pick<CommandContext, 'env'>): CliError {
  const serviceAccount = serviceAccountOf(session);
  if (serviceAccount) return authRequired(`The token of service account ${serviceAccount.clientId} expired at ${session.expiresAt}, and is not renewed — run the exchange again: \`${exchangeAgainLine(serviceAccount.clientId)}\`.`);
  return authRequired(`Session expired at ${session.expiresAt} — run \`${loginCommandLine(session.apiBaseUrl, { env: ctx.env })}\`.`);
}

/**
 * A token is never sent to a host it was not issued by: a session for another backend than the
 * one asked for is refused. When an account of that backend is stored, the way is to switch to it.
 */
export async function refuseOtherBackend(ctx: CommandContext, session: SessionFile): Promise<void> {
  const asked = requestedApiUrl(ctx);
  if (asked === undefined || normalizeBaseUrl(asked) === normalizeBaseUrl(session.apiBaseUrl)) return;
  const other = normalizeBaseUrl(asked);
  const stored = (await new AccountsFile(ctx.store).read()).some((account) => account.apiBaseUrl === other);
  const fix = stored ? `prospect auth:switch --host ${other}` : loginCommandLine(other, { env: ctx.env });
  throw authRequired(`Your session is for ${session.apiBaseUrl}, not ${other} — run \`${fix}\`.`);
}
