import { CLI_SCOPES, ENV, ROUTES, type SessionFile } from '@prospect/contract';
import { exchangeAgainLine } from '../api-client/login-hints.js';
import type { MeAnswer } from '../api-client/me-answer.js';
import { type CommandContext, envToken, writeLine } from '../context.js';
import { CliError, FileSystemError, usageError } from '../errors.js';
import { Accounts } from '../session/accounts.js';
import { inKeychain, keptIn, serviceAccountOf } from '../session/kept-secrets.js';
import { revokeSession } from '../session/refresh.js';
import { apiClientFor } from '../session/session-context.js';
import { notLoggedIn, refuseOtherBackend } from './auth-guard.js';
import { loginWithDevice, loginWithWeb, parseTimeout } from './auth-login.js';
import { parseScopesFlag } from './scopes-flag.js';
import { apiUrlFlag, type Command } from './command.js';
import { person, printJson } from './session-report.js';

/** Ending a session on the server is a courtesy past this: the local change does not wait for it. */
const REVOKE_TIMEOUT_MS = 3_000;

/**
 * `prospect auth:refresh --scopes <list>`, as `gh auth refresh -s`: a new approval (device login,
 * or --web) for the same server with the scopes asked for. The new session must be the same
 * account's; it then replaces the old one under the session's lock (Accounts.logIn), and the old
 * one is ended on the server, so no grant is left behind. Another account's approval is refused:
 * the new session is signed out on the server and the old one kept as it was.
 */
export const refreshCommand: Command = {
  name: 'auth:refresh',
  description: 'Ask for other scopes for the active session, with a new approval in the browser',
  usage: `
  Usage
    $ prospect auth:refresh --scopes <list> [--web] [--json] [--timeout-seconds <n>]

  Options
    --scopes <list>          The scopes the session should have from now on, comma-separated, of
                             ${CLI_SCOPES.join(', ')} (more or fewer than it has)
    --web                    Approve in the browser of this machine (as \`auth:login --web\`)
                             instead of with a code
    --json                   Print the result as JSON, for scripts (the login's lines go to stderr)
    --api-url <url>          Check that the active session is for this server
    --timeout-seconds <n>    How long to wait for approval
    --no-browser             Do not open a browser; just show the link and code
    --no-qr                  Do not show the QR code

  The approval must come from the account of the session: another account's is refused,
  and the session stays as it was. Once approved, the new session replaces the old one,
  which is signed out on the server.

  Examples
    $ prospect auth:refresh --scopes profile,tokens,admin
    $ prospect auth:refresh --scopes profile
`,
  flags: {
    ...apiUrlFlag,
    scopes: { type: 'string' },
    web: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    timeoutSeconds: { type: 'string' },
    browser: { type: 'boolean', default: true },
    qr: { type: 'boolean', default: true },
  },
  requiresAuth: false,
  async run(ctx: CommandContext) {
    // What was typed first: a usage error needs no session and asks the server nothing.
    const scopes = parseScopesFlag(ctx.flags.scopes);
    if (!scopes) throw usageError(`auth:refresh needs --scopes, the scopes the session should have (for example --scopes profile,tokens,admin).`);
    const timeoutSeconds = parseTimeout(ctx.flags.timeoutSeconds);
    if (envToken(ctx)) {
      throw new CliError(`${ENV.token} is set: the CLI uses that token, whose scopes are the ones it was made with.`, 1, `Unset ${ENV.token} to refresh your session, or make a token with other scopes at the tokens page.`);
    }
    const read = await ctx.store.read();
    if (read.kind !== 'session') throw notLoggedIn(read, ctx);
    const old = read.session;
    await refuseOtherBackend(ctx, old);
    // No person approves a machine's scopes (issue #45): it asks for them at the exchange.
    const serviceAccount = serviceAccountOf(old);
    if (serviceAccount) {
      throw usageError(`This session is the service account ${serviceAccount.clientId}'s, whose scopes are asked for at the exchange: \`${exchangeAgainLine(serviceAccount.clientId)} --scopes …\`.`);
    }
    await ctx.store.checkWritable().catch((err: unknown) => {
      if (!(err instanceof FileSystemError)) throw err;
      throw new CliError(`Cannot refresh: ${err.path} cannot be written (${err.reason}); set ${ENV.configDir} to a directory you can write to.`);
    });

    const api = apiClientFor(ctx, old.apiBaseUrl);
    // With --json, stdout is the JSON alone: the login's link and code go to stderr.
    const shown: CommandContext = ctx.flags.json ? { ...ctx, stdout: ctx.stderr } : ctx;
    const fresh =
      ctx.flags.web === true
        ? await loginWithWeb(shown, api, timeoutSeconds, scopes)
        : await loginWithDevice(shown, api, timeoutSeconds, scopes, (user) => `Approved by ${person(user)}`);
    const endFresh = () => revokeSession(apiClientFor(ctx, old.apiBaseUrl, REVOKE_TIMEOUT_MS), fresh);

    // The server's word on who the new token is for and what it may do (X-OAuth-Scopes).
    let me: MeAnswer;
    try {
      me = await api.me(fresh.accessToken);
    } catch (err) {
      await endFresh();
      throw err;
    }
    if (me.user.id !== old.user.id) {
      const ended = await endFresh();
      throw new CliError(
        `Refused: ${person(me.user)} approved it, not ${person(old.user)} whose session this is; your session is unchanged${ended ? ' and the new one was signed out on the server' : ''}.`,
      );
    }

    // Its tokens kept where the old session's are: a new approval does not move them.
    const session: SessionFile = keptIn({ ...fresh, user: me.user }, inKeychain(old) ? 'keychain' : 'file');
    let replaced: SessionFile[];
    try {
      ({ replaced } = await new Accounts(ctx.store).logIn(session));
    } catch (err) {
      const ended = await endFresh();
      if (!(err instanceof CliError)) throw err;
      throw new CliError(err.message, 1, ended ? 'The new session was signed out on the server again; your session is unchanged.' : err.hint);
    }
    // The old session (as the file held it under the lock: another process may have renewed it)
    // ends on the server, as auth:logout ends it: a device login's is revoked; a token pasted
    // with --token may be in use elsewhere, so it is only forgotten here.
    const previous = replaced.filter((s) => s.accessToken !== session.accessToken);
    const pasted = previous.filter((s) => !s.refreshToken);
    const ends = await Promise.all(previous.filter((s) => s.refreshToken).map((s) => revokeSession(apiClientFor(ctx, s.apiBaseUrl, REVOKE_TIMEOUT_MS), s)));
    const oldSessionEnded = ends.every(Boolean) && !pasted.length;
    const granted = me.scopes;
    const missing = granted ? scopes.filter((scope) => !granted.includes(scope)) : [];

    if (ctx.flags.json) {
      printJson(ctx, { server: session.apiBaseUrl, user: me.user, scopes: granted ?? null, requestedScopes: scopes, expiresAt: me.expiresAt, oldSessionEnded });
    } else {
      const list = granted ? (granted.length ? granted.map((scope) => `'${scope}'`).join(', ') : 'none') : 'not said by the server';
      writeLine(ctx.stdout, `Refreshed the session of ${person(me.user)} on ${session.apiBaseUrl}: its scopes are ${list}.`);
      const tokensPage = `${session.apiBaseUrl}${ROUTES.tokensPage}`;
      if (pasted.length) writeLine(ctx.stderr, `The token you had pasted was only forgotten here and still works wherever else it is used: revoke it at ${tokensPage}.`);
      else writeLine(ctx.stderr, oldSessionEnded ? 'The previous session was signed out on the server.' : `The previous session could not be signed out on the server: end it at ${tokensPage}.`);
    }
    if (missing.length) writeLine(ctx.stderr, `Note: the server did not grant ${missing.map((scope) => `'${scope}'`).join(', ')}.`);
  },
};
