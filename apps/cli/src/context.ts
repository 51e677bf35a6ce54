import type { SessionFile } from '@prospect/contract';
import { ENV } from '@prospect/contract';
import { ApiClient, type FetchLike } from './api-client/api-client.js';
import { ServerClock } from './session/server-clock.js';
import type { SessionStore } from './session/session-store.js';

/** Where every command gets what it needs, so tests can hand in their own. */
export interface CommandContext {
  /** Positional arguments after the command name. */
  input: string[];
  flags: Record<string, unknown>;
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
  /** A person at a terminal: stdin and stdout are TTYs and this is not CI. Computed once. */
  interactive: boolean;
  store: SessionStore;
  fetch?: FetchLike;
  /** The session, for commands that require one (set by the auth guard); unset when the token comes from PROSPECT_TOKEN. */
  session?: SessionFile;
  /** What a guarded command authenticates with: the session file's token, or PROSPECT_TOKEN's. */
  credentials?: Credentials;
  /** Stops the command: Ctrl-C. */
  signal: AbortSignal;
  /** The server's clock as measured against this machine's (serverClockOf); a test may hand in one with a fake local clock. */
  serverClock?: ServerClock;
}

export interface Credentials {
  accessToken: string;
  apiBaseUrl: string;
  source: 'env' | 'file';
}

/** PROSPECT_TOKEN, when set: every command uses it instead of the session file, and nothing writes it to disk. */
export function envToken(ctx: Pick<CommandContext, 'env'>): string | undefined {
  const token = ctx.env[ENV.token]?.trim();
  return token || undefined;
}

/** `--api-url` beats PROSPECT_API_BASE_URL; undefined when neither is given. */
export function requestedApiUrl(ctx: Pick<CommandContext, 'flags' | 'env'>): string | undefined {
  const flag = ctx.flags.apiUrl;
  if (typeof flag === 'string' && flag.trim()) return flag;
  return ctx.env[ENV.apiBaseUrl] || undefined;
}

export const writeLine = (stream: NodeJS.WritableStream, line = '') => stream.write(`${line}\n`);

/**
 * The clock every expiry is judged by: the server's, as its answers tell it, kept beside the
 * session file (session/server-clock.ts). One per command run.
 */
export function serverClockOf(ctx: Pick<CommandContext, 'store' | 'serverClock'>): ServerClock {
  ctx.serverClock ??= new ServerClock(ctx.store.dir);
  return ctx.serverClock;
}

/**
 * The one way a command gets a client of the API: for `baseUrl`, through the context's fetch
 * (tests hand in their own); with a session store, every answer also measures the server's clock.
 */
export function apiClientFor(ctx: Pick<CommandContext, 'fetch' | 'serverClock'> & Partial<Pick<CommandContext, 'store'>>, baseUrl: string, timeoutMs?: number): ApiClient {
  if (ctx.store) ctx.serverClock ??= new ServerClock(ctx.store.dir);
  return new ApiClient({ baseUrl, fetch: ctx.fetch, timeoutMs, serverClock: ctx.serverClock });
}
