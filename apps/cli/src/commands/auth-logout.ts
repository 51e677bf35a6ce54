import { DEFAULT_REFRESH_TOKEN_TTL_SECONDS, ENV, ROUTES, type SessionFile, utcMinute } from '@prospect/contract';
import { apiClientFor, type CommandContext, envToken, serverClockOf, writeLine } from '../context.js';
import { CliError, EXIT } from '../errors.js';
import { revokeSession } from '../session/refresh.js';
import { withSessionLock } from '../session/session-lock.js';
import type { Command } from './command.js';

/** Revoking on the server is a courtesy: offline, logging out still works. */
const REVOKE_TIMEOUT_MS = 3_000;

/**
 * `prospect auth:logout`. A session this CLI made by device login (it holds a refresh token)
 * belongs to this machine: it is revoked on the server, every token of it. A token pasted with
 * `--token` may be in use elsewhere (a CI secret, another laptop): it is only forgotten here, as
 * `gh auth logout` does, unless `--revoke` says to revoke it too.
 */
export const logoutCommand: Command = {
  name: 'auth:logout',
  description: 'Log out: remove the local session (a device login is also revoked on the server)',
  usage: `
  Usage
    $ prospect auth:logout [--revoke]

  Options
    --revoke  Also revoke a token that was pasted with \`auth:login --token\` (it stops working
              everywhere it is used). A device-login session is always revoked.
`,
  flags: { revoke: { type: 'boolean', default: false } },
  requiresAuth: false,
  async run(ctx: CommandContext) {
    if (envToken(ctx)) {
      throw new CliError(
        `${ENV.token} is set: the CLI uses that token, and logging out cannot forget it.`,
        EXIT.failure,
        `Unset ${ENV.token} to stop using it (revoke it on the server's tokens page if it should stop working everywhere).`,
      );
    }
    if ((await ctx.store.read()).kind === 'none') {
      writeLine(ctx.stdout, 'Not logged in.');
      return;
    }
    // Under the session's lock: a refresh in another process cannot write the session back.
    const { read, revoke, revoked, removed } = await withSessionLock(ctx.store, async () => {
      const read = await ctx.store.read();
      const revoke = read.kind === 'session' && (Boolean(read.session.refreshToken) || ctx.flags.revoke === true);
      const revoked = revoke && (await revokeSession(apiClientFor(ctx, read.session.apiBaseUrl, REVOKE_TIMEOUT_MS), read.session));
      return { read, revoke, revoked, removed: await ctx.store.remove() };
    });
    if (read.kind !== 'session') {
      writeLine(ctx.stdout, removed ? 'Removed an unreadable session file. Not logged in.' : 'Not logged in.');
      return;
    }
    const server = read.session.apiBaseUrl;
    if (!revoke) {
      writeLine(ctx.stdout, `Logged out of ${server}. The token you pasted was only forgotten here and still works wherever else it is used:`);
      writeLine(ctx.stdout, `revoke it at ${server}${ROUTES.tokensPage}, or log in with it again and run \`prospect auth:logout --revoke\`.`);
    } else {
      writeLine(ctx.stdout, `Logged out of ${server}${revoked ? ' and revoked the token on the server' : ' (the server could not be told; the local session is removed)'}.`);
      if (!revoked) writeLine(ctx.stdout, await stillValidThere(ctx, read.session));
    }
  },
};

const DAY_MS = 24 * 3600 * 1000;

/**
 * The one line an offline logout owes: what the server still honours of the session it forgot,
 * for how long, and where to end it. A refresh token lives REFRESH_TOKEN_TTL_SECONDS (by default
 * DEFAULT_REFRESH_TOKEN_TTL_SECONDS) from the moment its pair was obtained (`createdAt`, by the
 * server's clock); a pasted token, until its `expiresAt`.
 */
async function stillValidThere(ctx: CommandContext, session: SessionFile): Promise<string> {
  const revokeAt = `${session.apiBaseUrl}${ROUTES.tokensPage}`;
  if (!session.refreshToken) return `The token still works until ${utcMinute(session.expiresAt)}: revoke it at ${revokeAt}.`;
  const serverNow = await serverClockOf(ctx).now(session.apiBaseUrl);
  const leftMs = Date.parse(session.createdAt) + DEFAULT_REFRESH_TOKEN_TTL_SECONDS * 1000 - serverNow;
  const days = Math.min(Math.max(Math.ceil(leftMs / DAY_MS), 1), DEFAULT_REFRESH_TOKEN_TTL_SECONDS * 1000 / DAY_MS);
  return `Its refresh token may still be valid on the server for up to ${days} day${days === 1 ? '' : 's'}: revoke the session at ${revokeAt}.`;
}
