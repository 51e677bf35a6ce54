import { ApiClient, type FetchLike } from '../api-client/api-client.js';
import { normalizeBaseUrl } from '../api-client/base-url.js';
import { ServerClock } from './server-clock.js';
import type { SessionStore } from './session-store.js';

/**
 * What the session's own code (refresh, the server's clock) needs of a command's run. The
 * command context (context.ts) is one: it builds on this, so session/ never reaches up to it.
 */
export interface SessionContext {
  env: NodeJS.ProcessEnv;
  store: SessionStore;
  fetch?: FetchLike;
  /** Stops the command: Ctrl-C. */
  signal: AbortSignal;
  /** The server's clock as measured against this machine's (serverClockOf); a test may hand in one with a fake local clock. */
  serverClock?: ServerClock;
  /**
   * The organization this run acts for (`--org`, else the session's, org:switch) and the server it
   * belongs to: every request to that server carries its slug (ORGANIZATION_HEADER), none elsewhere.
   */
  actingFor?: { apiBaseUrl: string; slug: string };
}

/**
 * The clock every expiry is judged by: the server's, as its answers tell it, kept beside the
 * session file (server-clock.ts). One per command run.
 */
export function serverClockOf(ctx: Pick<SessionContext, 'store' | 'serverClock'>): ServerClock {
  ctx.serverClock ??= new ServerClock(ctx.store.dir);
  return ctx.serverClock;
}

/**
 * The one way a command gets a client of the API: for `baseUrl`, through the context's fetch
 * (tests hand in their own); with a session store, every answer also measures the server's clock.
 */
export function apiClientFor(ctx: Pick<SessionContext, 'fetch' | 'serverClock'> & Partial<Pick<SessionContext, 'store' | 'actingFor'>>, baseUrl: string, timeoutMs?: number): ApiClient {
  if (ctx.store) ctx.serverClock ??= new ServerClock(ctx.store.dir);
  const organization = ctx.actingFor && normalizeBaseUrl(baseUrl) === normalizeBaseUrl(ctx.actingFor.apiBaseUrl) ? ctx.actingFor.slug : undefined;
  return new ApiClient({ baseUrl, fetch: ctx.fetch, timeoutMs, serverClock: ctx.serverClock, organization });
}
