import { ApiClient } from '../api-client/api-client.js';
import { type CommandContext, writeLine } from '../context.js';
import { revokeSession } from '../session/refresh.js';
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
    const read = await ctx.store.read();
    let revoked = false;
    if (read.kind === 'session') {
      const api = new ApiClient({ baseUrl: read.session.apiBaseUrl, fetch: ctx.fetch, timeoutMs: REVOKE_TIMEOUT_MS });
      revoked = await revokeSession(api, read.session);
    }
    const removed = await ctx.store.remove();
    if (read.kind === 'session') {
      writeLine(ctx.stdout, `Logged out of ${read.session.apiBaseUrl}${revoked ? '' : ' (the server could not be told; the local session is removed)'}.`);
    } else {
      writeLine(ctx.stdout, removed ? 'Removed an unreadable session file. Not logged in.' : 'Not logged in.');
    }
  },
};
