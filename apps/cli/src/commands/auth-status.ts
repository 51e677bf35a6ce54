import { DEFAULT_API_BASE_URL, ENV } from '@prospect/contract';
import { loginCommandLine, normalizeBaseUrl } from '../api-client/api-client.js';
import { type CommandContext, envToken, requestedApiUrl, writeLine } from '../context.js';
import { authRequired } from '../errors.js';
import { expiryMoment } from '../format.js';
import { refreshSession } from '../session/refresh.js';
import type { Command } from './command.js';
import { askServer, person, printJson, readReportedSession, SESSION_REPORT_USAGE, sessionReportFlags } from './session-report.js';

/** `prospect auth:status`, like `gh auth status`: what the CLI would authenticate with, and where it comes from. */
export const statusCommand: Command = {
  name: 'auth:status',
  description: 'Show the server, the user, where the token comes from and when it expires',
  usage: SESSION_REPORT_USAGE('auth:status', 'Also ask the server what it says of the token', [['--show-token', 'Print the token itself instead of its masked form']]),
  flags: { ...sessionReportFlags, showToken: { type: 'boolean', default: false } },
  requiresAuth: false,
  async run(ctx: CommandContext) {
    const fromEnv = envToken(ctx);
    let status: Status;
    if (fromEnv) {
      status = { server: normalizeBaseUrl(requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL), tokenSource: 'PROSPECT_TOKEN', token: fromEnv };
    } else {
      let session = await readReportedSession(ctx);
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
      const said = await askServer(ctx, status.server, status.token);
      status = said.valid ? { ...status, user: said.user, expiresAt: said.expiresAt, scopes: said.scopes, serverSays: 'valid' } : { ...status, serverSays: said.problem };
    }
    const expired = status.expiresAt !== undefined && Date.parse(status.expiresAt) <= Date.now();
    // An expired access token with a refresh token is renewed by the next command.
    const usable = (!expired || status.refreshToken === true) && (status.serverSays === undefined || status.serverSays === 'valid');
    const { token: _secret, ...shown } = status;
    if (ctx.flags.json) {
      printJson(ctx, { ...shown, expired, usable });
    } else {
      const line = (label: string, value: string) => writeLine(ctx.stdout, `${`${label}:`.padEnd(13)} ${value}`);
      line('Server', status.server);
      line('User', status.user ? person(status.user) : 'not known until --verify');
      line('Token', ctx.flags.showToken ? status.token : maskToken(status.token));
      line('Token from', status.tokenSource === 'PROSPECT_TOKEN' ? 'the PROSPECT_TOKEN environment variable' : status.tokenSource);
      // Only the server knows them: shown with --verify, as gh shows `Token scopes`.
      if (status.scopes) line('Token scopes', status.scopes.length ? status.scopes.map((scope) => `'${scope}'`).join(', ') : 'none');
      if (status.expiresAt) line('Expires', `${expired ? 'expired ' : ''}${expiryMoment(status.expiresAt)}`);
      if (status.refreshToken !== undefined) {
        line('Refresh', status.refreshToken ? 'a refresh token is stored; the access token is renewed when it expires' : 'none');
      }
      if (status.serverSays) line('Server says', status.serverSays === 'valid' ? 'the token is valid' : `the token is ${status.serverSays}`);
    }
    if (!usable) {
      const fix = fromEnv ? `set ${ENV.token} to a valid token, or unset it to use your session` : `run \`${loginCommandLine(status.server, { env: ctx.env })}\``;
      throw authRequired(`${expired ? 'The session has expired' : `The server says the token is ${status.serverSays}`} — ${fix}.`);
    }
  },
};

/** Its prefix and a star for every other character, as `gh auth status` shows one: which kind of token, none of the secret. */
function maskToken(token: string): string {
  const prefix = /^[a-z]+_/.exec(token)?.[0] ?? '';
  return prefix + '*'.repeat(Math.min(token.length - prefix.length, 40));
}

interface Status {
  server: string;
  tokenSource: string;
  token: string;
  user?: { id: string; email: string; name: string };
  expiresAt?: string;
  refreshToken?: boolean;
  scopes?: string[];
  serverSays?: string;
}
