import { DEFAULT_API_BASE_URL, ENV, LiveAnswerSchema, ROUTES } from '@prospect/contract';
import type { FetchLike } from './api-client/api-client.js';
import { normalizeBaseUrl } from './api-client/base-url.js';
import { httpTransport } from './api-client/http-transport.js';
import { usageError } from './errors.js';
import { apiClientFor } from './session/session-context.js';
import { configDir, SessionStore } from './session/session-store.js';

const VERSION_USAGE = 'Usage: prospect --version [--verify [--api-url <url>]]';

/**
 * `prospect --version --verify [--api-url <url>]`: the line of the server's version under the
 * CLI's own, as the liveness route tells it (GET /api/health/live, no token needed). The server is
 * the one a command would use: --api-url, else PROSPECT_API_BASE_URL, else the active session's,
 * else the default.
 */
export function parseVersionArgs(args: string[]): { apiUrl?: string } {
  let apiUrl: string | undefined;
  let verify = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--verify') verify = true;
    else if (arg === '--api-url' && args[i + 1] !== undefined) apiUrl = args[++i];
    else if (arg.startsWith('--api-url=')) apiUrl = arg.slice('--api-url='.length);
    else throw usageError(`--version takes --verify (and --api-url <url>), not ${JSON.stringify(arg)}.`, VERSION_USAGE);
  }
  if (!verify) throw usageError('--api-url with --version needs --verify: the version alone asks no server.', VERSION_USAGE);
  return { apiUrl };
}

export async function serverVersionLine({ apiUrl }: { apiUrl?: string }, io: { env: NodeJS.ProcessEnv; fetch?: FetchLike; signal: AbortSignal }): Promise<string> {
  const active = await new SessionStore(configDir(io.env)).read();
  const baseUrl = normalizeBaseUrl(apiUrl ?? (io.env[ENV.apiBaseUrl] || undefined) ?? (active.kind === 'session' ? active.session.apiBaseUrl : DEFAULT_API_BASE_URL));
  const { body } = await apiClientFor({ fetch: io.fetch ?? httpTransport(io.env) }, baseUrl).request('GET', ROUTES.healthLive, { signal: io.signal });
  const answer = LiveAnswerSchema.safeParse(body);
  if (!answer.success) return `Server ${baseUrl}: not a Prospect server's answer`;
  return `Server ${baseUrl}: ${answer.data.version ?? 'a version too old to say which'}`;
}
