import { ENV, SERVICE_ACCOUNT_CLIENT_ID_PREFIX, SERVICE_ACCOUNT_SCOPES, type SessionFile } from '@prospect/contract';
import type { ApiClient } from '../api-client/api-client.js';
import { ApiHttpError } from '../api-client/api-errors.js';
import { type CommandContext, envToken, writeLine } from '../context.js';
import { CliError, EXIT, FileSystemError, usageError } from '../errors.js';
import { humanDuration } from '../format.js';
import { Accounts } from '../session/accounts.js';
import type { KeptSession } from '../session/kept-secrets.js';
import { revokeSession } from '../session/refresh.js';
import { apiClientFor, serverClockOf } from '../session/session-context.js';
import { parseFederatedTokenFlag, readFederatedToken } from '../workload-identity/federated-token.js';
import { exchangeFederatedToken, serviceIssuer } from '../workload-identity/token-exchange.js';
import { parseScopesFlag } from './scopes-flag.js';
import { person } from './session-report.js';

/** Flags of a person's login that mean nothing here; given with --service-account, a usage error. */
const PERSON_LOGIN_FLAGS: Record<string, string> = { token: '--token', web: '--web', timeoutSeconds: '--timeout-seconds', secureStorage: '--secure-storage' };

/**
 * `auth:login --service-account <clientId> --federated-token <file|-|github>` (issue #45): the CI
 * job's own OIDC token exchanged (RFC 8693) for a short-lived access token of the service
 * account, with no stored secret anywhere. Plain lines only (CI has no terminal), nothing secret
 * printed but with --no-store, and no refresh token: when it expires, the job runs this again.
 *
 * Kept as the session file's active session (the default), or with --no-store nowhere on disk:
 * the token alone goes to stdout, for `export PROSPECT_TOKEN=$(…)`, the CLI's in-memory way
 * (as GH_TOKEN is gh's), and never to a terminal.
 */
export async function loginAsServiceAccount(ctx: CommandContext, api: ApiClient): Promise<void> {
  try {
    await exchangeAndKeep(ctx, api);
  } catch (err) {
    // A usage error here is shown with this way's usage, not a person's login's.
    if (err instanceof CliError && err.exitCode === EXIT.usage && !err.hint) throw usageError(err.message, SERVICE_ACCOUNT_USAGE);
    throw err;
  }
}

const SERVICE_ACCOUNT_USAGE =
  'Usage: prospect auth:login --service-account <clientId> --federated-token <file|-|github> [--audience <aud>] [--scopes <list>] [--no-store] (see `prospect auth:login --help`)';

async function exchangeAndKeep(ctx: CommandContext, api: ApiClient): Promise<void> {
  const clientId = typeof ctx.flags.serviceAccount === 'string' ? ctx.flags.serviceAccount.trim() : '';
  if (!clientId) throw usageError(`--service-account needs the service account's client ID (${SERVICE_ACCOUNT_CLIENT_ID_PREFIX}…), as its organization's page shows it.`);
  if (ctx.flags.federatedToken === undefined) throw usageError('--service-account needs the CI token to exchange: --federated-token <file|-|github>.');
  for (const [flag, spelled] of Object.entries(PERSON_LOGIN_FLAGS)) {
    if (ctx.flags[flag] !== undefined && ctx.flags[flag] !== false) throw usageError(`${spelled} is for a person's login, not with --service-account.`);
  }
  const source = parseFederatedTokenFlag(ctx.flags.federatedToken);
  const audienceFlag = ctx.flags.audience;
  if (audienceFlag !== undefined && (typeof audienceFlag !== 'string' || !audienceFlag.trim())) throw usageError('--audience needs the audience the federation expects.');
  if (audienceFlag !== undefined && source.kind !== 'github') throw usageError('--audience is for --federated-token github, which asks GitHub for a token with it; a token from a file or stdin already has its audience.');
  const scopes = parseScopesFlag(ctx.flags.scopes, SERVICE_ACCOUNT_SCOPES);
  const store = ctx.flags.store !== false;
  if (store && envToken(ctx)) {
    writeLine(ctx.stderr, `Warning: ${ENV.token} is set, and commands use it instead of the session you are logging in to. Unset it to use this session.`);
  }
  if (!store && ctx.stdout.isTTY) {
    throw usageError('--no-store writes the token to stdout, which is a terminal here: capture it instead.', `For example: export ${ENV.token}=$(prospect auth:login --service-account ${clientId} --federated-token … --no-store)`);
  }
  if (store) {
    // Before the CI token is spent (its jti is single use): an exchange nobody can keep is wasted.
    await ctx.store.checkWritable().catch((err: unknown) => {
      if (!(err instanceof FileSystemError)) throw err;
      throw new CliError(`Cannot log in: ${err.path} cannot be written (${err.reason}); set ${ENV.configDir} to a directory you can write to, or use --no-store.`);
    });
  }

  const subjectToken = await readFederatedToken(source, ctx, async () => (typeof audienceFlag === 'string' ? audienceFlag.trim() : serviceIssuer(api, ctx.signal)));
  const exchanged = await exchangeFederatedToken(api, { clientId, subjectToken, scopes }, ctx.signal);
  const obtainedAt = await serverClockOf(ctx).now(api.baseUrl);
  const lifetime = humanDuration(exchanged.expiresInSeconds * 1000);

  if (!store) {
    writeLine(ctx.stdout, exchanged.accessToken);
    writeLine(ctx.stderr, `Exchanged the CI token for a token of ${clientId} on ${api.baseUrl}; it lasts ${lifetime}, and nothing was saved.`);
    return;
  }
  const session = await describeSession(api, clientId, exchanged.accessToken, {
    apiBaseUrl: api.baseUrl,
    expiresAt: new Date(obtainedAt + exchanged.expiresInSeconds * 1000).toISOString(),
    createdAt: new Date(obtainedAt).toISOString(),
  });
  const saved = await new Accounts(ctx.store).logIn(session);
  for (const replaced of saved.replaced) {
    // Ended on its server, best effort, as a person's replaced session is: a token nobody holds any more should not live on.
    const ended = await revokeSession(apiClientFor(ctx, replaced.apiBaseUrl, 3_000), replaced);
    writeLine(ctx.stderr, `Replaced the session of ${person(replaced.user)} on ${replaced.apiBaseUrl}${ended ? ' (ended on the server)' : ''}.`);
  }
  if (saved.kept) writeLine(ctx.stderr, `Kept the session of ${person(saved.kept.user)} on ${saved.kept.apiBaseUrl}: \`prospect auth:switch\` goes back to it.`);
  writeLine(ctx.stdout, `Logged in as ${serviceAccountName(session)} on ${api.baseUrl}.`);
  writeLine(ctx.stderr, `Session saved to ${ctx.store.path} (expires in ${lifetime}, not renewed: run the exchange again then).`);
}

/**
 * The session of the new token: who it is, as /me says (it needs `profile`). A token without
 * `profile` is kept under its client ID, its organization not known here.
 */
async function describeSession(api: ApiClient, clientId: string, accessToken: string, times: Pick<SessionFile, 'apiBaseUrl' | 'expiresAt' | 'createdAt'>): Promise<KeptSession> {
  try {
    const me = await api.me(accessToken);
    if (!me.serviceAccount) throw new CliError(`${api.baseUrl} says the exchanged token is ${person(me.user)}'s, not a service account's; nothing was saved.`);
    return { accessToken, ...times, expiresAt: me.expiresAt, user: me.user, serviceAccount: { clientId, organization: me.serviceAccount.organization } };
  } catch (err) {
    if (!(err instanceof ApiHttpError) || err.status !== 403) throw err;
    return { accessToken, ...times, user: { id: clientId, email: '', name: clientId }, serviceAccount: { clientId } };
  }
}

/** `Service account nightly sync of Acme (acme)`, or by its client ID when its token may not say more. */
export function serviceAccountName(session: KeptSession): string {
  const organization = session.serviceAccount?.organization;
  return organization ? `service account ${session.user.name} of ${organization.name} (${organization.slug})` : `service account ${session.serviceAccount?.clientId ?? session.user.name}`;
}
