import { AuthorizedResponseSchema, CLI_CLIENT_ID, OAUTH_ROUTES, ROUTES, type SessionFile } from '@prospect/contract';
import { type ApiClient, ApiHttpError, ApiUnreachableError, loginCommandLine } from '../api-client/api-client.js';
import { apiClientFor, type CommandContext } from '../context.js';
import { authRequired, CliError, FileSystemError } from '../errors.js';
import { withSessionLock } from './session-lock.js';

/** The most ahead of its expiry that a session is refreshed before a command uses it. */
export const MAX_REFRESH_AHEAD_MS = 60_000;

/**
 * How long before its expiry a session is renewed: a quarter of its access token's lifetime,
 * at most a minute. A fixed minute would renew a token that lives a minute or less before
 * every command, and five commands at once would renew it five times in a row. The lifetime
 * is `expiresAt - createdAt`: `createdAt` is when the session's current pair was obtained
 * (a login, or the refresh that saved it).
 */
export function refreshAheadMs(session: SessionFile): number {
  const lifetimeMs = Date.parse(session.expiresAt) - Date.parse(session.createdAt);
  return Math.min(Math.max(lifetimeMs / 4, 0), MAX_REFRESH_AHEAD_MS);
}

/** True when the session would be refreshed before use: it has a refresh token and is within refreshAheadMs of expiry. */
export function needsRefresh(session: SessionFile, now = Date.now()): boolean {
  return session.refreshToken !== undefined && Date.parse(session.expiresAt) - now <= refreshAheadMs(session);
}

export type RefreshResult = { session: SessionFile; refreshed: boolean };

/**
 * Renews a session about to expire (needsRefresh) with its refresh token (the server rotates it),
 * and writes the new pair atomically. Two CLI processes refreshing at once take turns on the
 * session's lock (session-lock.ts), and the second finds the first one's new session instead of
 * presenting the used refresh token again, which the server would take for a reuse.
 *
 * A refusal (reused, revoked, expired) ends the session: the file is removed and the error
 * (exit 4) says how to log in again. A network failure keeps the session: exit 1, or, while
 * the access token still works, the session as it is.
 */
export async function refreshSession(ctx: Pick<CommandContext, 'store' | 'fetch' | 'env' | 'signal'>, session: SessionFile, now = Date.now): Promise<RefreshResult> {
  if (!needsRefresh(session, now())) return { session, refreshed: false };
  return withSessionLock(ctx.store, async () => {
    // Whoever held the lock before us may have refreshed already, or logged out, or in again.
    const current = await ctx.store.read();
    if (current.kind !== 'session' || current.session.apiBaseUrl !== session.apiBaseUrl) {
      throw authRequired(`The session changed while refreshing it — run \`${loginCommandLine(session.apiBaseUrl, { env: ctx.env })}\`.`);
    }
    if (!needsRefresh(current.session, now())) return { session: current.session, refreshed: current.session.accessToken !== session.accessToken };
    return { session: await exchange(ctx, current.session, now), refreshed: true };
  });
}

async function exchange(ctx: Pick<CommandContext, 'store' | 'fetch' | 'env' | 'signal'>, session: SessionFile, now: () => number): Promise<SessionFile> {
  const api = apiClientFor(ctx, session.apiBaseUrl);
  const ask = () => api.request('POST', ROUTES.refresh, { body: { refreshToken: session.refreshToken }, signal: ctx.signal });
  let body: unknown;
  try {
    try {
      ({ body } = await ask());
    } catch (err) {
      // The answer may be lost after the server rotated: the old token, presented again
      // before its successor is used, answers the same successor pair.
      if (!(err instanceof ApiUnreachableError) || ctx.signal.aborted) throw err;
      ({ body } = await ask());
    }
  } catch (err) {
    if (err instanceof ApiHttpError && err.status === 401) {
      await ctx.store.remove();
      throw authRequired(`${err.message} The local session is removed — run \`${loginCommandLine(session.apiBaseUrl, { env: ctx.env })}\`.`);
    }
    // Unreachable, 5xx, ...: the session stays; while its access token works, so does the command.
    if (Date.parse(session.expiresAt) > now()) return session;
    if (err instanceof CliError) throw new CliError(`Could not refresh the session: ${err.message}`, 1, err.hint ?? 'The session is kept; try again when the server is back.');
    throw err;
  }
  const answer = AuthorizedResponseSchema.safeParse(body);
  if (!answer.success) throw new CliError(`${session.apiBaseUrl} answered the refresh with an unexpected shape; the session is kept.`, 1, 'Is it a Prospect server?');
  const { accessToken, refreshToken, expiresAt, user } = answer.data;
  // createdAt: when this pair was obtained, which measures its lifetime (refreshAheadMs).
  const renewed: SessionFile = { ...session, accessToken, expiresAt, user, createdAt: new Date(now()).toISOString(), ...(refreshToken ? { refreshToken } : {}) };
  // Saved before anything else. If it cannot be, the old pair stays on disk and this command
  // stops: its next run presents the old token, which still answers this same successor.
  try {
    await ctx.store.write(renewed);
  } catch (err) {
    if (!(err instanceof FileSystemError)) throw err;
    throw new CliError(`The renewed session could not be saved to ${err.path} (${err.reason}); the previous one is kept, and the next command renews it again.`);
  }
  return renewed;
}

/**
 * Ends the session on the server: the refresh token revokes its whole family (RFC 7009), so a
 * logout works even after the access token expired; without one, the access token is revoked.
 * Resolves false when the server could not be told.
 */
export async function revokeSession(api: ApiClient, session: SessionFile): Promise<boolean> {
  const revoke = session.refreshToken
    ? api.request('POST', OAUTH_ROUTES.revoke, { form: { token: session.refreshToken, token_type_hint: 'refresh_token', client_id: CLI_CLIENT_ID } })
    : api.request('POST', ROUTES.logout, { token: session.accessToken });
  return revoke.then(
    () => true,
    () => false,
  );
}

