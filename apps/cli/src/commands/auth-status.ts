import { DEFAULT_API_BASE_URL, ENV } from '@prospect/contract';
import { loginCommandLine, normalizeBaseUrl } from '../api-client/api-client.js';
import { type CommandContext, envToken, requestedApiUrl, serverClockOf, writeLine } from '../context.js';
import { authRequired } from '../errors.js';
import { expiryMoment } from '../format.js';
import { refreshSession } from '../session/refresh.js';
import type { Command } from './command.js';
import { askServer, person, printJson, readReportedSession, SESSION_REPORT_USAGE, type ServerSays, sessionReportFlags, verifySession } from './session-report.js';

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
    let said: ServerSays | undefined;
    let refreshed = false;
    if (fromEnv) {
      status = { server: normalizeBaseUrl(requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL), tokenSource: 'PROSPECT_TOKEN', token: fromEnv };
      if (ctx.flags.verify) said = await askServer(ctx, status.server, status.token);
    } else {
      let session = await readReportedSession(ctx);
      if (ctx.flags.verify) {
        // --verify asks the server about the token a command would use: renewed first, if due,
        // and renewed again if the server refuses it while its refresh token lives.
        ({ session, refreshed } = await refreshSession(ctx, session));
        const verified = await verifySession(ctx, session);
        ({ session, said } = verified);
        refreshed ||= verified.renewed;
      }
      status = {
        server: session.apiBaseUrl,
        tokenSource: ctx.store.path,
        token: session.accessToken,
        user: session.user,
        expiresAt: session.expiresAt,
        refreshToken: Boolean(session.refreshToken),
      };
    }
    if (said) {
      status = said.valid
        ? { ...status, user: said.user, expiresAt: said.expiresAt, scopes: said.scopes, madeWith: said.madeWith, serverSays: 'valid' }
        : { ...status, serverSays: said.problem };
    }
    // By the server's clock, which set expiresAt (this machine's may be minutes or hours off).
    const serverNow = await serverClockOf(ctx).now(status.server);
    const expired = status.expiresAt !== undefined && Date.parse(status.expiresAt) <= serverNow;
    // An expired access token with a refresh token is renewed by the next command.
    const usable = (!expired || status.refreshToken === true) && (status.serverSays === undefined || status.serverSays === 'valid');
    const { token: _secret, ...shown } = status;
    if (ctx.flags.json) {
      printJson(ctx, { ...shown, expired, usable, ...(ctx.flags.verify && !fromEnv ? { refreshed } : {}) });
    } else {
      const line = (label: string, value: string) => writeLine(ctx.stdout, `${`${label}:`.padEnd(13)} ${value}`);
      line('Server', status.server);
      line('User', status.user ? person(status.user) : 'not known until --verify');
      line('Token', ctx.flags.showToken ? status.token : maskToken(status.token));
      line('Token from', status.tokenSource === 'PROSPECT_TOKEN' ? 'the PROSPECT_TOKEN environment variable' : status.tokenSource);
      // Only the server knows them: shown with --verify, as gh shows `Token scopes`.
      if (status.scopes) line('Token scopes', status.scopes.length ? status.scopes.map((scope) => `'${scope}'`).join(', ') : 'none');
      // A token made with another token or a session: which one, as the server words it.
      if (status.madeWith) line('Made with', status.madeWith);
      if (status.expiresAt) line('Expires', `${expired ? 'expired ' : ''}${expiryMoment(status.expiresAt, serverNow)}`);
      if (status.refreshToken !== undefined) {
        line('Refresh', status.refreshToken ? 'a refresh token is stored; the access token is renewed when it expires' : 'none');
      }
      if (refreshed) line('Refreshed', 'just now: a new access token and refresh token are saved');
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
  /** Which token or session made this token (GET /me's `madeWith`), when the server says. */
  madeWith?: string;
  serverSays?: string;
}
