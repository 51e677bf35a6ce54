import { ENV } from '@prospect/contract';
import { ApiClient, ApiHttpError, loginCommandLine, normalizeBaseUrl } from '../api-client/api-client.js';
import { type CommandContext, DEFAULT_API_BASE_URL, envToken, requestedApiUrl, writeLine } from '../context.js';
import { authRequired } from '../errors.js';
import { expiryMoment } from '../format.js';
import { notLoggedIn, refuseOtherBackend } from '../session/auth-guard.js';
import { refreshSession } from '../session/refresh.js';
import { apiUrlFlag, type Command } from './command.js';

/** `prospect auth:status`, like `gh auth status`: what the CLI would authenticate with, and where it comes from. */
export const statusCommand: Command = {
  name: 'auth:status',
  description: 'Show the server, the user, where the token comes from and when it expires',
  usage: `
  Usage
    $ prospect auth:status [--verify] [--json] [--api-url <url>]

  Options
    --verify   Also ask the server what it says of the token
    --json     Print it as JSON, for scripts
    --api-url  Check that the session is for this server
`,
  flags: { ...apiUrlFlag, verify: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } },
  requiresAuth: false,
  async run(ctx: CommandContext) {
    const fromEnv = envToken(ctx);
    let status: Status;
    if (fromEnv) {
      status = { server: normalizeBaseUrl(requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL), tokenSource: 'PROSPECT_TOKEN', token: fromEnv };
    } else {
      const read = await ctx.store.read();
      if (read.kind !== 'session') throw notLoggedIn(read, ctx);
      refuseOtherBackend(ctx, read.session);
      let { session } = read;
      // --verify asks the server about the token a command would use: renewed first, if due.
      if (ctx.flags.verify) session = (await refreshSession(ctx, session)).session;
      status = {
        server: session.apiBaseUrl,
        tokenSource: ctx.store.path,
        token: session.accessToken,
        user: session.user,
        expiresAt: session.expiresAt,
        refreshToken: Boolean(session.refreshToken),
      };
    }
    if (ctx.flags.verify) {
      try {
        const me = await new ApiClient({ baseUrl: status.server, fetch: ctx.fetch }).me(status.token);
        status = { ...status, user: me.user, expiresAt: me.expiresAt, serverSays: 'valid' };
      } catch (err) {
        if (!(err instanceof ApiHttpError && err.status === 401)) throw err;
        status = { ...status, serverSays: err.tokenProblem ?? 'unknown' };
      }
    }
    const expired = status.expiresAt !== undefined && Date.parse(status.expiresAt) <= Date.now();
    // An expired access token with a refresh token is renewed by the next command.
    const usable = (!expired || status.refreshToken === true) && (status.serverSays === undefined || status.serverSays === 'valid');
    const { token: _secret, ...shown } = status;
    if (ctx.flags.json) {
      writeLine(ctx.stdout, JSON.stringify({ ...shown, expired, usable }, null, 2));
    } else {
      writeLine(ctx.stdout, `Server:   ${status.server}`);
      writeLine(ctx.stdout, `User:     ${status.user ? `${status.user.name} <${status.user.email}>` : 'not known until --verify'}`);
      writeLine(ctx.stdout, `Token:    from ${status.tokenSource === 'PROSPECT_TOKEN' ? 'the PROSPECT_TOKEN environment variable' : status.tokenSource}`);
      if (status.expiresAt) writeLine(ctx.stdout, `Expires:  ${expired ? 'expired ' : ''}${expiryMoment(status.expiresAt)}`);
      if (status.refreshToken !== undefined) {
        writeLine(ctx.stdout, `Refresh:  ${status.refreshToken ? 'a refresh token is stored; the access token is renewed when it expires' : 'none'}`);
      }
      if (status.serverSays) writeLine(ctx.stdout, `Server says: ${status.serverSays === 'valid' ? 'the token is valid' : `the token is ${status.serverSays}`}`);
    }
    if (!usable) {
      const fix = fromEnv ? `set ${ENV.token} to a valid token, or unset it to use your session` : `run \`${loginCommandLine(status.server, { env: ctx.env })}\``;
      throw authRequired(`${expired ? 'The session has expired' : `The server says the token is ${status.serverSays}`} — ${fix}.`);
    }
  },
};

interface Status {
  server: string;
  tokenSource: string;
  token: string;
  user?: { id: string; email: string; name: string };
  expiresAt?: string;
  refreshToken?: boolean;
  serverSays?: string;
}
