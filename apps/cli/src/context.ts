import type { SessionFile } from '@prospect/contract';
import { ENV } from '@prospect/contract';
import type { SessionContext } from './session/session-context.js';

/**
 * Where every command gets what it needs, so tests can hand in their own. It builds on the
 * session's context (store, fetch, env, signal, server clock): session/ is below the commands.
 */
export interface CommandContext extends SessionContext {
  /** Positional arguments after the command name. */
  input: string[];
  flags: Record<string, unknown>;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
  /** A person at a terminal: stdin and stdout are TTYs and this is not CI. Computed once. */
  interactive: boolean;
  /** The session, for commands that require one (set by the auth guard); unset when the token comes from PROSPECT_TOKEN. */
  session?: SessionFile;
  /** What a guarded command authenticates with: the session file's token, or PROSPECT_TOKEN's. */
  credentials?: Credentials;
}

export interface Credentials {
  accessToken: string;
  apiBaseUrl: string;
  source: 'env' | 'file';
  /** The client ID when the session is a service account's (issue #45): a refused token then says to run the exchange again. */
  serviceAccount?: string;
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
