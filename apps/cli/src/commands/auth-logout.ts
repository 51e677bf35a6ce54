import { apiClientFor, type CommandContext, writeLine } from '../context.js';
import { revokeSession } from '../session/refresh.js';
import { withSessionLock } from '../session/session-lock.js';
import type { Command } from './command.js';

/** Revoking on the server is a courtesy: offline, logging out still works. */
const REVOKE_TIMEOUT_MS = 3_000;

export const logoutCommand: Command = {
  name: 'auth:logout',
  description: 'Log out: revoke the session on the server (every token of it) and remove the local session',
  usage: `
  Usage
    $ prospect auth:logout
`,
  flags: {},
  requiresAuth: false,
  async run(ctx: CommandContext) {
    if ((await ctx.store.read()).kind === 'none') {
      writeLine(ctx.stdout, 'Not logged in.');
      return;
    }
    // Under the session's lock: a refresh in another process cannot write the session back.
    const { read, revoked, removed } = await withSessionLock(ctx.store, async () => {
      const read = await ctx.store.read();
      const revoked =
        read.kind === 'session' && (await revokeSession(apiClientFor(ctx, read.session.apiBaseUrl, REVOKE_TIMEOUT_MS), read.session));
      return { read, revoked, removed: await ctx.store.remove() };
    });
    if (read.kind === 'session') {
      writeLine(ctx.stdout, `Logged out of ${read.session.apiBaseUrl}${revoked ? '' : ' (the server could not be told; the local session is removed)'}.`);
    } else {
      writeLine(ctx.stdout, removed ? 'Removed an unreadable session file. Not logged in.' : 'Not logged in.');
    }
  },
};
