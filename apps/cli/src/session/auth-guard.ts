import { ENV, type SessionFile } from '@prospect/contract';
import { normalizeBaseUrl } from '../api-client/api-client.js';
import { type CommandContext, requestedApiUrl, writeLine } from '../context.js';
import { authRequired } from '../errors.js';

/**
 * The one guard in front of every command that needs a session (seed §3.2):
 * refuses before the command's own code runs when there is no usable session.
 * Returns the session, or undefined when PROSPECT_SKIP_AUTH=1 bypasses it.
 */
export async function requireSession(ctx: CommandContext, now = Date.now()): Promise<SessionFile | undefined> {
  if (ctx.env[ENV.skipAuth] === '1') {
    writeLine(ctx.stderr, `warning: ${ENV.skipAuth}=1 — skipping the login check (for tests and local development only)`);
    const read = await ctx.store.read();
    return read.kind === 'session' ? read.session : undefined;
  }
  const read = await ctx.store.read();
  if (read.kind === 'none') throw authRequired('Not logged in — run `prospect auth:login`.');
  if (read.kind === 'invalid') throw authRequired(`Not logged in: ${read.reason} — run \`prospect auth:login\`.`);
  const { session } = read;
  if (Date.parse(session.expiresAt) <= now) {
    throw authRequired(`Session expired at ${session.expiresAt} — run \`prospect auth:login\`.`);
  }
  const asked = requestedApiUrl(ctx);
  if (asked && normalizeBaseUrl(asked) !== normalizeBaseUrl(session.apiBaseUrl)) {
    // A token is never sent to a host it was not issued by.
    throw authRequired(
      `Your session is for ${session.apiBaseUrl}, not ${normalizeBaseUrl(asked)} — run \`prospect auth:login --api-url ${normalizeBaseUrl(asked)}\`.`,
    );
  }
  return session;
}
