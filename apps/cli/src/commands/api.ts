import { ApiClient } from '../api-client/api-client.js';
import { type CommandContext, writeLine } from '../context.js';
import { usageError } from '../errors.js';
import { apiUrlFlag, type Command } from './command.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** `prospect api <path>`: an authenticated request to the session's backend, like `gh api`. */
export const apiCommand: Command = {
  name: 'api',
  summary: 'Make an authenticated request to the Prospect API and print the JSON',
  usage: `
  Usage
    $ prospect api <path> [--method POST] [--data '{"key": "value"}']

  Options
    --method, -X   HTTP method (default GET, or POST with --data)
    --data, -d     JSON request body
    --api-url      The backend; must be the one you are logged in to

  Examples
    $ prospect api /api/cli/auth/me
`,
  flags: { method: { type: 'string', shortFlag: 'X' }, data: { type: 'string', shortFlag: 'd' }, ...apiUrlFlag },
  requiresAuth: true,
  async run(ctx: CommandContext) {
    const [path, ...extra] = ctx.input;
    if (!path || extra.length) throw usageError('Give exactly one path, e.g. `prospect api /api/cli/auth/me`.');
    if (!path.startsWith('/')) throw usageError(`The path must start with "/": ${JSON.stringify(path)}.`);
    let body: unknown;
    if (typeof ctx.flags.data === 'string') {
      try {
        body = JSON.parse(ctx.flags.data);
      } catch {
        throw usageError('--data must be JSON, e.g. --data \'{"label": "ci"}\'.');
      }
    }
    const method = typeof ctx.flags.method === 'string' ? ctx.flags.method.toUpperCase() : body === undefined ? 'GET' : 'POST';
    if (!METHODS.includes(method)) throw usageError(`Unknown --method ${JSON.stringify(ctx.flags.method)}: use one of ${METHODS.join(', ')}.`);
    const session = ctx.session;
    const baseUrl = session?.apiBaseUrl ?? (ctx.flags.apiUrl as string | undefined) ?? 'http://localhost:3000';
    const api = new ApiClient({ baseUrl, fetch: ctx.fetch });
    const res = await api.request(method, path, { body, token: session?.accessToken, signal: ctx.signal });
    if (res.body !== undefined) writeLine(ctx.stdout, JSON.stringify(res.body, null, 2));
  },
};
