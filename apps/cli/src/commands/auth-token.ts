import { type CommandContext, writeLine } from '../context.js';
import type { Command } from './command.js';

/** `prospect auth:token`: the token, alone on stdout, for scripts (\`curl -H "Authorization: Bearer $(prospect auth:token)"\`). */
export const tokenCommand: Command = {
  name: 'auth:token',
  description: 'Print the access token, for scripts (nothing else on stdout)',
  usage: `
  Usage
    $ prospect auth:token [--api-url <url>]

  The token of the session (or of PROSPECT_TOKEN), after the same checks as every command.
`,
  flags: { apiUrl: { type: 'string' } },
  requiresAuth: true,
  async run(ctx: CommandContext) {
    // The guard ran: an expired session or one for another backend never gets here.
    if (ctx.credentials) writeLine(ctx.stdout, ctx.credentials.accessToken);
  },
};
