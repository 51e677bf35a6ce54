import { AuthorizedResponseSchema, CLI_CLIENT_ID, OAUTH_ROUTES, ROUTES, type SessionFile } from '@prospect/contract';
import type { ApiClient } from '../api-client/api-client.js';
import { ApiHttpError, ApiUnreachableError } from '../api-client/api-errors.js';
import { loginCommandLine, sessionTokenRejected } from '../api-client/login-hints.js';
import { apiClientFor, type SessionContext, serverClockOf } from './session-context.js';
import { authRequired, CliError, FileSystemError } from '../errors.js';
import { sameAccount } from './accounts.js';
import { KeychainError } from './keychain.js';
import { serviceAccountOf } from './kept-secrets.js';
import { withSessionLock } from './session-lock.js';

/** The most ahead of its expiry that a session is refreshed before a command uses it. */
export const MAX_REFRESH_AHEAD_MS = 60_000;

/** What refreshing needs of a command's context. */
export type RefreshContext = SessionContext;

/**
 * How long before its expiry a session is renewed: a quarter of its access token's lifetime,
 * at most a minute. A fixed minute would renew a token that lives a minute or less before
 * every command, and five commands at once would renew it five times in a row. The lifetime
 * is `expiresAt - createdAt`: `createdAt` is when the session's current pair was obtained
 * (a login, or the refresh that saved it), by the server's clock as `expiresAt` is.
 */
export function refreshAheadMs(session: SessionFile): number {
  const lifetimeMs = Date.parse(session.expiresAt) - Date.parse(session.createdAt);
  return Math.min(Math.max(lifetimeMs / 4, 0), MAX_REFRESH_AHEAD_MS);
}

/**
 * True when the session would be refreshed before use: it has a refresh token and is within
 * refreshAheadMs of expiry. `serverNow` is the server's time (ServerClock), which set `expiresAt`.
 */
export function needsRefresh(session: SessionFile, serverNow: number): boolean {
  return session.refreshToken !== undefined && Date.parse(session.expiresAt) - serverNow <= refreshAheadMs(session);
}

export type RefreshResult = { session: SessionFile; refreshed: boolean };

/**
 * Renews a session about to expire by the server's clock (needsRefresh) with its refresh token
 * (the server rotates it), and writes the new pair atomically. Two CLI processes refreshing at
 * once take turns on the session's lock (session-lock.ts), and the second finds the first one's
 * new session instead of presenting the used refresh token again, which the server would take
 * for a reuse.
 *
 * Only the server's refusal of the refresh token (`invalid_grant`) ends the session: the file is
 * removed and the error (exit 4) says how to log in again; nothing is revoked. Anything else (a
 * network failure, a 5xx, an odd answer) keeps the session: exit 1, or, while the access token
 * still works, the session as it is.
 */
export async function refreshSession(ctx: RefreshContext, session: SessionFile): Promise<RefreshResult> {
  const clock = serverClockOf(ctx);
  if (!needsRefresh(session, await clock.now(session.apiBaseUrl))) return { session, refreshed: false };
  return withSessionLock(ctx.store, async () => {
    // Whoever held the lock before us may have refreshed already, or logged out, or in again.
    const current = await currentSession(ctx, session);
    if (!needsRefresh(current, await clock.now(current.apiBaseUrl))) return { session: current, refreshed: current.accessToken !== session.accessToken };
    const renewed = await exchange(ctx, current);
    return { session: renewed, refreshed: renewed.accessToken !== current.accessToken };
  });
}

/**
 * The server refused the session's access token (`refusal`, a 401 to a request made with it).
 * The server's word beats this machine's clock: the session is renewed once with its refresh
 * token, whatever the local clock says of `expiresAt`, and the caller asks again with the new
 * token. A session another process renewed meanwhile is taken as it is. As for refreshSession,
 * only a refusal of the refresh token ends the session.
 */
export async function renewRefusedSession(ctx: RefreshContext, session: SessionFile, refusal: ApiHttpError): Promise<SessionFile> {
  return withSessionLock(ctx.store, async () => {
    const current = await currentSession(ctx, session);
    if (current.accessToken !== session.accessToken) return current;
    if (!current.refreshToken) throw sessionTokenRejected(refusal, current.apiBaseUrl, { env: ctx.env, serviceAccount: serviceAccountOf(current)?.clientId });
    return exchange(ctx, current, refusal);
  });
}

/**
 * The session in the file now (read under the lock): the same account's, or the command stops
 * (another process switched accounts or logged out meanwhile: its token is not this command's).
 */
async function currentSession(ctx: RefreshContext, session: SessionFile): Promise<SessionFile> {
  const current = await ctx.store.read();
  if (current.kind !== 'session' || !sameAccount(current.session, session)) {
    throw authRequired(`The session changed while refreshing it — run \`${loginCommandLine(session.apiBaseUrl, { env: ctx.env })}\`.`);
  }
  return current.session;
}

/** The server's refusal of a refresh token (RFC 6749 §5.2 `invalid_grant`: reused, revoked, expired, unknown). */
const isRefusedGrant = (err: unknown): err is ApiHttpError => err instanceof ApiHttpError && (err.status === 400 || err.status === 401) && err.code === 'invalid_grant';

/** POST /refresh with the session's refresh token. `refusal`: the server refused its access token already, so it is of no use. */
async function exchange(ctx: RefreshContext, session: SessionFile, refusal?: ApiHttpError): Promise<SessionFile> {
  const api = apiClientFor(ctx, session.apiBaseUrl);
  const clock = serverClockOf(ctx);
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
    if (isRefusedGrant(err)) {
      // The server ended the session: only the local file is left to go; nothing more is revoked.
      await ctx.store.remove();
      // A disabled account: logging in again would not help, and that is the news.
      if (refusal?.tokenProblem === 'disabled') throw sessionTokenRejected(refusal, session.apiBaseUrl, { done: 'removed the local session', env: ctx.env });
      throw authRequired(`${err.message} The local session is removed — run \`${loginCommandLine(session.apiBaseUrl, { env: ctx.env })}\`.`);
    }
    // Unreachable, 5xx, a redirect, any other answer: the session stays; while its access token works, so does the command.
    if (!refusal && Date.parse(session.expiresAt) > (await clock.now(session.apiBaseUrl))) return session;
    if (err instanceof CliError) throw new CliError(`Could not refresh the session: ${err.message}`, 1, err.hint ?? 'The session is kept; try again when the server is back.');
    throw err;
  }
  const answer = AuthorizedResponseSchema.safeParse(body);
  if (!answer.success) throw new CliError(`${session.apiBaseUrl} answered the refresh with an unexpected shape; the session is kept.`, 1, 'Is it a Prospect server?');
  const { accessToken, refreshToken, expiresAt, user } = answer.data;
  // createdAt: when this pair was obtained, by the server's clock (its answer just measured it),
  // as expiresAt is: the two measure the pair's lifetime (refreshAheadMs).
  const obtainedAt = await clock.now(session.apiBaseUrl);
  const renewed: SessionFile = { ...session, accessToken, expiresAt, user, createdAt: new Date(obtainedAt).toISOString(), ...(refreshToken ? { refreshToken } : {}) };
  // Saved before anything else. If it cannot be, the old pair stays on disk and this command
  // stops: its next run presents the old token, which still answers this same successor.
  try {
    await ctx.store.write(renewed);
  } catch (err) {
    // A session kept in the keychain stays there: never written to the file instead, unasked.
    if (err instanceof KeychainError) throw new CliError(`The renewed session could not be saved to the OS keychain (${err.reason}); the previous one is kept, and the next command renews it again.`, 1, `To use the keychain, ${err.fix}.`);
    if (!(err instanceof FileSystemError)) throw err;
    throw new CliError(`The renewed session could not be saved to ${err.path} (${err.reason}); the previous one is kept, and the next command renews it again.`);
  }
  return renewed;
}

/**
 * Ends the session on the server: the refresh token revokes its whole family (RFC 7009), so a
 * logout works even after the access token expired; without one, the access token is revoked
 * (a service account's at the revocation endpoint).
 * Resolves false when the server could not be told.
 */
export async function revokeSession(api: ApiClient, session: SessionFile): Promise<boolean> {
  const revoke = session.refreshToken
    ? api.request('POST', OAUTH_ROUTES.revoke, { form: { token: session.refreshToken, token_type_hint: 'refresh_token', client_id: CLI_CLIENT_ID } })
    : serviceAccountOf(session)
      ? // A service account's token is no session of the CLI's client, and no route of a person's takes it: RFC 7009, by the token it holds.
        api.request('POST', OAUTH_ROUTES.revoke, { form: { token: session.accessToken, token_type_hint: 'access_token' } })
      : api.request('POST', ROUTES.logout, { token: session.accessToken });
  return revoke.then(
    () => true,
    () => false,
  );
}

