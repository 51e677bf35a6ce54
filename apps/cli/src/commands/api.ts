import { ApiClient, ApiHttpError, sessionTokenRejected } from '../api-client/api-client.js';
import { type CommandContext, DEFAULT_API_BASE_URL, requestedApiUrl, writeLine } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { apiUrlFlag, type Command } from './command.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** `prospect api <path>`: an authenticated request to the session's backend, like `gh api`. */
export const apiCommand: Command = {
  name: 'api',
  description: 'Make an authenticated request to the Prospect API and print the JSON',
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
  positional: 1,
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
    const credentials = ctx.credentials;
    // Only PROSPECT_SKIP_AUTH=1 gets here without credentials.
    const baseUrl = credentials?.apiBaseUrl ?? requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL;
    const api = new ApiClient({ baseUrl, fetch: ctx.fetch });
    let res;
    try {
      res = await api.request(method, path, { body, token: credentials?.accessToken, signal: ctx.signal });
    } catch (err) {
      if (err instanceof ApiHttpError && err.status === 401 && credentials) throw sessionTokenRejected(err, api.baseUrl);
      // The status is what a script or a person debugging a call needs first.
      if (err instanceof ApiHttpError) throw new CliError(`HTTP ${err.status}${err.code ? ` ${err.code}` : ''}: ${err.message}`);
      throw err;
    }
    if (res.body !== undefined) writeLine(ctx.stdout, JSON.stringify(res.body, null, 2));
  },
};
