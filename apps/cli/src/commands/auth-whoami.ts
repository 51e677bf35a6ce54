import { loginCommandLine, sessionTokenRejected } from '../api-client/api-client.js';
import { type CommandContext, writeLine } from '../context.js';
import { authRequired } from '../errors.js';
import { describeExpiry } from '../format.js';
import { refreshSession } from '../session/refresh.js';
import type { Command } from './command.js';
import { askServer, person, printJson, readReportedSession, SESSION_REPORT_USAGE, sessionReportFlags } from './session-report.js';

export const whoamiCommand: Command = {
  name: 'auth:whoami',
  description: 'Show who you are logged in as',
  usage: `${SESSION_REPORT_USAGE('auth:whoami', 'Check the session with the server (GET /api/cli/auth/me) and update it')}
  An access token about to expire (within a quarter of its lifetime, at most a minute) is
  first renewed with the session's refresh token, as every command does.
`,
  flags: sessionReportFlags,
  requiresAuth: false,
  async run(ctx: CommandContext) {
    let session = await readReportedSession(ctx);
    let verified = false;
    let refreshed = false;
    ({ session, refreshed } = await refreshSession(ctx, session));

    if (ctx.flags.verify) {
      const said = await askServer(ctx, session.apiBaseUrl, session.accessToken);
      if (!said.valid) {
        // The server says the token is dead: so is the local session.
        await ctx.store.remove();
        throw sessionTokenRejected(said.error, session.apiBaseUrl, { done: 'removed the local session', env: ctx.env });
      }
      session = { ...session, user: said.user, expiresAt: said.expiresAt };
      await ctx.store.write(session);
      verified = true;
    }

    const expired = Date.parse(session.expiresAt) <= Date.now();
    if (ctx.flags.json) {
      printJson(ctx, { user: session.user, apiBaseUrl: session.apiBaseUrl, expiresAt: session.expiresAt, expired, verified, refreshed, refreshable: Boolean(session.refreshToken) });
    } else if (!expired) {
      writeLine(ctx.stdout, `Logged in to ${session.apiBaseUrl} as ${person(session.user)}${verified ? ' (verified)' : ''}`);
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
