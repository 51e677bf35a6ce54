import type { Organization, SessionFile, User } from '@prospect/contract';
import { ApiHttpError, type TokenProblem } from '../api-client/api-errors.js';
import type { MeAnswer } from '../api-client/me-answer.js';
import { type CommandContext, writeLine } from '../context.js';
import { apiClientFor } from '../session/session-context.js';
import { notLoggedIn, refuseOtherBackend } from './auth-guard.js';
import { renewRefusedSession } from '../session/refresh.js';
import { apiUrlFlag, type FlagSpec } from './command.js';

/**
 * What `auth:whoami` and `auth:status` share: both report on a session rather than use it,
 * with the same flags, the same reading of the session file and the same question to the server.
 */
export const sessionReportFlags: Record<string, FlagSpec> = {
  ...apiUrlFlag,
  verify: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
};

/** The usage of a reporting command; `extra` adds options of its own (flag, what it does). */
export function SESSION_REPORT_USAGE(name: string, verify: string, extra: Array<[string, string]> = []): string {
  const options: Array<[string, string]> = [['--api-url', 'Check that the session is for this server'], ['--verify', verify], ['--json', 'Print it as JSON, for scripts'], ...extra];
  const width = Math.max(...options.map(([flag]) => flag.length)) + 2;
  return `
  Usage
    $ prospect ${name} [--verify] [--json] [--api-url <url>]${extra.map(([flag]) => ` [${flag}]`).join('')}

  Options
${options.map(([flag, text]) => `    ${flag.padEnd(width)}${text}`).join('\n')}
`;
}

/**
 * The session file's session, read directly (not through the guard, which would refresh or
 * refuse it), with the guard's check that it belongs to the backend asked for.
 */
export async function readReportedSession(ctx: CommandContext): Promise<SessionFile> {
  const read = await ctx.store.read();
  if (read.kind !== 'session') throw notLoggedIn(read, ctx);
  await refuseOtherBackend(ctx, read.session);
  return read.session;
}

/** GET /api/cli/auth/me: who the server says the token is, or why it refuses it (a 401); anything else throws. */
export async function askServer(
  ctx: CommandContext,
  baseUrl: string,
  token: string,
): Promise<
  | { valid: true; user: User; expiresAt: string; scopes?: string[]; madeWith?: string; organizations?: Organization[]; serviceAccount?: MeAnswer['serviceAccount'] }
  | { valid: false; problem: TokenProblem; error: ApiHttpError }
> {
  try {
    const me = await apiClientFor(ctx, baseUrl).me(token);
    return { valid: true, user: me.user, expiresAt: me.expiresAt, scopes: me.scopes, madeWith: me.madeWith, organizations: me.organizations, serviceAccount: me.serviceAccount };
  } catch (err) {
    if (!(err instanceof ApiHttpError && err.status === 401)) throw err;
    return { valid: false, problem: err.tokenProblem ?? 'unknown', error: err };
  }
}

export type ServerSays = Awaited<ReturnType<typeof askServer>>;

/**
 * askServer for a session's token. A refusal is not the end of a session that holds a refresh
 * token: only the server's refusal of that refresh token is (renewRefusedSession removes the
 * session then, and throws). So a refused access token is renewed once, whatever this
 * machine's clock says, and the server asked again with the new one; `renewed` says so.
 */
export async function verifySession(ctx: CommandContext, session: SessionFile): Promise<{ session: SessionFile; said: ServerSays; renewed: boolean }> {
  const said = await askServer(ctx, session.apiBaseUrl, session.accessToken);
  if (said.valid || !session.refreshToken) return { session, said, renewed: false };
  const renewed = await renewRefusedSession(ctx, session, said.error);
  return { session: renewed, said: await askServer(ctx, renewed.apiBaseUrl, renewed.accessToken), renewed: true };
}

/** A person as `Name <address>`; a service account, which has no address (in memory: ''), by its name. */
export const person = (user: Pick<User, 'name' | 'email'>) => (user.email ? `${user.name} <${user.email}>` : user.name);

/** A service account's token in words (issue #45): a machine of one organization, no person. */
export const serviceAccountWords = (user: Pick<User, 'name'>, serviceAccount: NonNullable<MeAnswer['serviceAccount']>) =>
  `Service account ${user.name} of ${serviceAccount.organization.name} (${serviceAccount.organization.slug})`;

export const printJson = (ctx: CommandContext, value: unknown) => writeLine(ctx.stdout, JSON.stringify(value, null, 2));
