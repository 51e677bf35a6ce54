import { ApiClient, ApiHttpError, loginCommandLine, sessionTokenRejected } from '../api-client/api-client.js';
import { type CommandContext, writeLine } from '../context.js';
import { authRequired } from '../errors.js';
import { notLoggedIn, refuseOtherBackend } from '../session/auth-guard.js';
import { refreshSession } from '../session/refresh.js';
import { describeExpiry } from '../format.js';
import { apiUrlFlag, type Command } from './command.js';

export const whoamiCommand: Command = {
  name: 'auth:whoami',
  description: 'Show who you are logged in as',
  usage: `
  Usage
    $ prospect auth:whoami [--verify] [--json] [--api-url <url>]

  Options
    --api-url  Check that the session is for this server
    --verify   Check the session with the server (GET /api/cli/auth/me) and update it
    --json     Print the session as JSON, for scripts

  An access token about to expire (within a quarter of its lifetime, at most a minute) is
  first renewed with the session's refresh token, as every command does.
`,
  flags: { ...apiUrlFlag, verify: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } },
  requiresAuth: false,
  async run(ctx: CommandContext) {
    const read = await ctx.store.read();
    // whoami reports on the session itself, so it reads it rather than going through the guard,
    // but with the guard's check that the session belongs to the backend asked for.
    if (read.kind !== 'session') throw notLoggedIn(read, ctx);
    let session = read.session;
    refuseOtherBackend(ctx, session);
    let verified = false;
    let refreshed = false;
    ({ session, refreshed } = await refreshSession(ctx, session));

    if (ctx.flags.verify) {
      const api = new ApiClient({ baseUrl: session.apiBaseUrl, fetch: ctx.fetch });
      try {
        const me = await api.me(session.accessToken);
        session = { ...session, user: me.user, expiresAt: me.expiresAt };
        await ctx.store.write(session);
        verified = true;
      } catch (err) {
        if (!(err instanceof ApiHttpError && err.status === 401)) throw err;
        // The server says the token is dead: so is the local session.
        await ctx.store.remove();
        throw sessionTokenRejected(err, session.apiBaseUrl, { done: 'removed the local session', env: ctx.env });
      }
    }

    const expired = Date.parse(session.expiresAt) <= Date.now();
    if (ctx.flags.json) {
      writeLine(
        ctx.stdout,
        JSON.stringify({ user: session.user, apiBaseUrl: session.apiBaseUrl, expiresAt: session.expiresAt, expired, verified, refreshed, refreshable: Boolean(session.refreshToken) }, null, 2),
      );
    } else if (!expired) {
      writeLine(ctx.stdout, `Logged in to ${session.apiBaseUrl} as ${session.user.name} <${session.user.email}>${verified ? ' (verified)' : ''}`);
      if (refreshed) writeLine(ctx.stdout, 'Refreshed the session: a new access token and refresh token are saved.');
      writeLine(
        ctx.stdout,
        session.refreshToken
          ? `Access token ${describeExpiry(session.expiresAt)}; renewed automatically`
          : `Session ${describeExpiry(session.expiresAt)}`,
      );
    }
    // An expired session never reads as logged in.
    if (expired) throw authRequired(`Your session for ${session.apiBaseUrl} (${session.user.email}) expired at ${session.expiresAt} — run \`${loginCommandLine(session.apiBaseUrl, { env: ctx.env })}\`.`);
  },
};
