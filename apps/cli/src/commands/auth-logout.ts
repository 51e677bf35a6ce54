import { DEFAULT_REFRESH_TOKEN_TTL_SECONDS, ENV, ROUTES, type SessionFile, utcMinute } from '@prospect/contract';
import { type CommandContext, envToken, writeLine } from '../context.js';
import { apiClientFor, serverClockOf } from '../session/session-context.js';
import { CliError, EXIT } from '../errors.js';
import { revokeSession } from '../session/refresh.js';
import { Accounts, activeOf, allOf, type StoredAccounts } from '../session/accounts.js';
import { serviceAccountOf } from '../session/kept-secrets.js';
import { ACCOUNT_FLAGS_USAGE, accountFlags, accountName, describeWanted, matchAccounts, pickAccount, wantedAccount } from './account-choice.js';
import type { Command } from './command.js';

/** Revoking on the server is a courtesy: offline, logging out still works. */
const REVOKE_TIMEOUT_MS = 3_000;

/**
 * `prospect auth:logout`. A session this CLI made by device login (it holds a refresh token)
 * belongs to this machine: it is revoked on the server, every token of it. A token pasted with
 * `--token` may be in use elsewhere (a CI secret, another laptop): it is only forgotten here, as
 * `gh auth logout` does, unless `--revoke` says to revoke it too. With several accounts stored,
 * it logs out of the one --host and --user name, or the one picked at a terminal.
 */
export const logoutCommand: Command = {
  name: 'auth:logout',
  description: 'Log out of an account: forget its session (a device login is also revoked on the server)',
  usage: `
  Usage
    $ prospect auth:logout [--host <url>] [--user <email>] [--revoke]

  Options
${ACCOUNT_FLAGS_USAGE}
    --revoke            Also revoke a token that was pasted with \`auth:login --token\` (it stops
                        working everywhere it is used). A device-login session is always revoked.

  With one account stored, it logs out of that one. With several, say which with --host
  and --user, or pick one at a terminal. Logging out of the active account makes another
  one active (one on the same server first), and says which.
`,
  flags: { ...accountFlags, revoke: { type: 'boolean', default: false } },
  requiresAuth: false,
  async run(ctx: CommandContext) {
    if (envToken(ctx)) {
      throw new CliError(
        `${ENV.token} is set: the CLI uses that token, and logging out cannot forget it.`,
        EXIT.failure,
        `Unset ${ENV.token} to stop using it (revoke it on the server's tokens page if it should stop working everywhere).`,
      );
    }
    const accounts = new Accounts(ctx.store);
    const stored = await accounts.read();
    const all = allOf(stored);
    if (stored.active.kind === 'none' && !all.length) {
      writeLine(ctx.stdout, 'Not logged in.');
      return;
    }
    const target = await chooseTarget(ctx, stored);
    // Under the session's lock: a refresh in another process cannot write the session back.
    const out = await accounts.logOut(target, async (session) => {
      // A service account's token was exchanged for this job alone (issue #45): logging out ends it too.
      const revoke = Boolean(session.refreshToken) || ctx.flags.revoke === true || serviceAccountOf(session) !== undefined;
      return { revoke, revoked: revoke && (await revokeSession(apiClientFor(ctx, session.apiBaseUrl, REVOKE_TIMEOUT_MS), session)) };
    });
    if (!out.ended) {
      writeLine(ctx.stdout, target ? `${accountName(target)} was logged out meanwhile.` : out.wasActive ? 'Removed an unreadable session file. Not logged in.' : 'Not logged in.');
    } else {
      const { session, result } = out.ended;
      const server = session.apiBaseUrl;
      // With one account, the server says which; with several, the person too.
      const which = all.length > 1 ? accountName(session) : server;
      if (!result.revoke) {
        writeLine(ctx.stdout, `Logged out of ${which}. The token you pasted was only forgotten here and still works wherever else it is used:`);
        writeLine(ctx.stdout, `revoke it at ${server}${ROUTES.tokensPage}, or log in with it again and run \`prospect auth:logout --revoke\`.`);
      } else {
        writeLine(ctx.stdout, `Logged out of ${which}${result.revoked ? ' and revoked the token on the server' : ' (the server could not be told; the local session is removed)'}.`);
        if (!result.revoked) writeLine(ctx.stdout, await stillValidThere(ctx, session));
      }
    }
    if (out.nowActive) writeLine(ctx.stdout, `Now active: ${accountName(out.nowActive)} (\`prospect auth:switch\` changes it).`);
    else if (out.wasActive && all.length > 1) writeLine(ctx.stdout, 'No account is active now.');
  },
};

/**
 * Which account to log out of: the one --host and --user name; else the only one (undefined:
 * the active file, whatever it holds, as before there were several); else the one picked at a
 * terminal, or a one-line error saying which flags to pass.
 */
async function chooseTarget(ctx: CommandContext, stored: StoredAccounts): Promise<SessionFile | undefined> {
  const all = allOf(stored);
  const active = activeOf(stored);
  const wanted = wantedAccount(ctx);
  if (wanted) {
    const matches = matchAccounts(all, wanted);
    if (!matches.length) throw new CliError(`No stored account matches ${describeWanted(wanted)}; nothing was logged out.`, EXIT.failure, 'See the stored accounts with `prospect auth:status`.');
    if (matches.length === 1) return matches[0];
    return pickAccount(ctx, matches, { command: 'auth:logout', question: 'Log out of which account?', active, stored: all.length });
  }
  if (all.length <= 1) return active ? undefined : all[0];
  return pickAccount(ctx, all, { command: 'auth:logout', question: 'Log out of which account?', active, stored: all.length });
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * The one line an offline logout owes: what the server still honours of the session it forgot,
 * for how long, and where to end it. A refresh token lives REFRESH_TOKEN_TTL_SECONDS (by default
 * DEFAULT_REFRESH_TOKEN_TTL_SECONDS) from the moment its pair was obtained (`createdAt`, by the
 * server's clock); a pasted token, until its `expiresAt`.
 */
async function stillValidThere(ctx: CommandContext, session: SessionFile): Promise<string> {
  const revokeAt = `${session.apiBaseUrl}${ROUTES.tokensPage}`;
  if (serviceAccountOf(session)) return `The service account's token still works until ${utcMinute(session.expiresAt)}.`;
  if (!session.refreshToken) return `The token still works until ${utcMinute(session.expiresAt)}: revoke it at ${revokeAt}.`;
  const serverNow = await serverClockOf(ctx).now(session.apiBaseUrl);
  const leftMs = Date.parse(session.createdAt) + DEFAULT_REFRESH_TOKEN_TTL_SECONDS * 1000 - serverNow;
  const days = Math.min(Math.max(Math.ceil(leftMs / DAY_MS), 1), DEFAULT_REFRESH_TOKEN_TTL_SECONDS * 1000 / DAY_MS);
  return `Its refresh token may still be valid on the server for up to ${days} day${days === 1 ? '' : 's'}: revoke the session at ${revokeAt}.`;
}
