import { DEFAULT_API_BASE_URL, ENV, type SessionFile, utcMinute } from '@prospect/contract';
import { normalizeBaseUrl } from '../api-client/base-url.js';
import { exchangeAgainLine, loginCommandLine } from '../api-client/login-hints.js';
import { type CommandContext, envToken, requestedApiUrl, writeLine } from '../context.js';
import { serverClockOf } from '../session/session-context.js';
import { authRequired } from '../errors.js';
import { expiryMoment } from '../format.js';
import { Accounts, activeOf, type StoredAccounts } from '../session/accounts.js';
import { refreshSession } from '../session/refresh.js';
import { type CredentialStore, describeEntry, inKeychain, serviceAccountOf } from '../session/kept-secrets.js';
import { accountName } from './account-choice.js';
import type { Command } from './command.js';
import { actFor, describeOrganization, ORG_FLAG_USAGE, orgFlag, reportedOrganization, requestedOrg } from './organization-choice.js';
import { askServer, person, printJson, readReportedSession, SESSION_REPORT_USAGE, type ServerSays, sessionReportFlags, verifySession, serviceAccountWords } from './session-report.js';

/** `prospect auth:status`, like `gh auth status`: what the CLI would authenticate with, and where it comes from. */
export const statusCommand: Command = {
  name: 'auth:status',
  description: 'Show the server, the user, where the token comes from and when it expires; list every account',
  usage: `${SESSION_REPORT_USAGE('auth:status', 'Also ask the server what it says of the token', [['--show-token', 'Print the token itself instead of its masked form'], ORG_FLAG_USAGE('Show this organization (asked of the server)')])}
  The organization your commands act for (\`prospect org:switch\`) is shown too; with
  --verify, as the server says it now (for a token with the "orgs" scope).

  With several accounts stored (\`prospect auth:login\` to another server, or as another
  person, keeps them), it also lists each one, the active one marked with *; --json adds
  them as \`accounts\`. \`prospect auth:switch\` changes the active one.
`,
  flags: { ...sessionReportFlags, ...orgFlag, showToken: { type: 'boolean', default: false } },
  requiresAuth: false,
  async run(ctx: CommandContext) {
    requestedOrg(ctx);
    const fromEnv = envToken(ctx);
    const stored = await new Accounts(ctx.store).read();
    // The active account as this run leaves it (renewed or verified), for the list.
    let active: SessionFile | undefined;
    let status: Status;
    let said: ServerSays | undefined;
    let refreshed = false;
    if (fromEnv) {
      status = { server: normalizeBaseUrl(requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL), tokenSource: 'PROSPECT_TOKEN', token: fromEnv };
      actFor(ctx, status.server, undefined);
      if (ctx.flags.verify) said = await askServer(ctx, status.server, status.token);
    } else {
      // Stored accounts but none active (its session was refused and removed, or its file is unreadable): they are listed, and how to pick one.
      if (stored.active.kind !== 'session' && stored.others.length) {
        await reportAccounts(ctx, stored, undefined);
        throw authRequired(`No account is active — run \`prospect auth:switch\` to use one of the ${stored.others.length} stored.`);
      }
      let session = await readReportedSession(ctx);
      actFor(ctx, session.apiBaseUrl, session);
      if (ctx.flags.verify) {
        // --verify asks the server about the token a command would use: renewed first, if due,
        // and renewed again if the server refuses it while its refresh token lives.
        ({ session, refreshed } = await refreshSession(ctx, session));
        const verified = await verifySession(ctx, session);
        ({ session, said } = verified);
        refreshed ||= verified.renewed;
      }
      active = session;
      // Where the token lives (issue 48): the session file, or the OS keychain beside it.
      status = {
        server: session.apiBaseUrl,
        tokenSource: inKeychain(session) ? describeEntry(session) : ctx.store.path,
        credentialStore: inKeychain(session) ? 'keychain' : 'file',
        sessionFile: ctx.store.path,
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
    // Only a usable token is asked about --org; the session's organization is shown as it is kept, or as /me said it just now.
    ctx.session = active;
    ctx.credentials = { accessToken: status.token, apiBaseUrl: status.server, source: fromEnv ? 'env' : 'file' };
    const { organization, lost } = usable ? await reportedOrganization(ctx, active, said?.valid ? said.organizations : undefined) : { organization: active?.organization ?? null, lost: undefined };
    const accounts = await listAccounts(ctx, stored, active);
    if (ctx.flags.json) {
      printJson(ctx, { ...shown, organization, ...(lost ? { lostOrganization: lost } : {}), expired, usable, ...(ctx.flags.verify && !fromEnv ? { refreshed } : {}), accounts });
    } else {
      const line = (label: string, value: string) => writeLine(ctx.stdout, `${`${label}:`.padEnd(13)} ${value}`);
      line('Server', status.server);
      // A service account's session (issue #45) names its organization as /me said it at the exchange.
      const storedOrganization = active && serviceAccountOf(active)?.organization;
      const serviceAccount = said?.valid ? said.serviceAccount : storedOrganization ? { organization: storedOrganization } : undefined;
      line('User', serviceAccount && status.user ? serviceAccountWords(status.user, serviceAccount) : status.user ? person(status.user) : 'not known until --verify');
      line('Token', ctx.flags.showToken ? status.token : maskToken(status.token));
      line('Token from', status.tokenSource === 'PROSPECT_TOKEN' ? 'the PROSPECT_TOKEN environment variable' : status.tokenSource);
      // The rest of a session kept in the keychain is still in the file.
      if (status.credentialStore === 'keychain') line('Session file', status.sessionFile!);
      // Only the server knows them: shown with --verify, as gh shows `Token scopes`.
      if (status.scopes) line('Token scopes', status.scopes.length ? status.scopes.map((scope) => `'${scope}'`).join(', ') : 'none');
      // A token made with another token or a session: which one, as the server words it.
      if (status.madeWith) line('Made with', status.madeWith);
      if (status.expiresAt) line('Expires', `${expired ? 'expired ' : ''}${expiryMoment(status.expiresAt, serverNow)}`);
      if (status.refreshToken !== undefined) {
        line('Refresh', status.refreshToken ? 'a refresh token is stored; the access token is renewed when it expires' : 'none');
      }
      if (organization) line('Organization', `${describeOrganization(organization)}; commands act for it`);
      if (lost) line('Organization', `${lost}, no longer one of yours: \`prospect org:switch <slug>\` another, or \`prospect org:switch --none\``);
      if (refreshed) line('Refreshed', 'just now: a new access token and refresh token are saved');
      if (status.serverSays) line('Server says', status.serverSays === 'valid' ? 'the token is valid' : `the token is ${status.serverSays}`);
      // One account is the block above; several (or one beside PROSPECT_TOKEN) are listed too.
      if (accounts.length > 1 || (fromEnv && accounts.length)) printAccounts(ctx, accounts, Boolean(fromEnv));
    }
    if (!usable) {
      const exchanged = active && serviceAccountOf(active);
      const fix = fromEnv
        ? `set ${ENV.token} to a valid token, or unset it to use your session`
        : exchanged
          ? `run the exchange again: \`${exchangeAgainLine(exchanged.clientId)}\``
          : `run \`${loginCommandLine(status.server, { env: ctx.env })}\``;
      throw authRequired(`${expired ? 'The session has expired' : `The server says the token is ${status.serverSays}`} — ${fix}.`);
    }
  },
};

interface ListedAccount {
  server: string;
  user: { id: string; email: string; name: string };
  expiresAt: string;
  expired: boolean;
  refreshToken: boolean;
  active: boolean;
  credentialStore: CredentialStore;
}

/** Every stored account, the active one first (as `active` has it after this run's renewal), each judged by its server's clock. */
async function listAccounts(ctx: CommandContext, stored: StoredAccounts, active: SessionFile | undefined): Promise<ListedAccount[]> {
  const current = active ?? activeOf(stored);
  const sessions = [...(current ? [current] : []), ...stored.others];
  return Promise.all(
    sessions.map(async (session) => ({
      server: session.apiBaseUrl,
      user: session.user,
      expiresAt: session.expiresAt,
      expired: Date.parse(session.expiresAt) <= (await serverClockOf(ctx).now(session.apiBaseUrl)),
      refreshToken: Boolean(session.refreshToken),
      active: session === current,
      credentialStore: inKeychain(session) ? 'keychain' : 'file',
    })),
  );
}

/** One line per account, the active one marked with a star, as `gh auth status` marks it. */
function printAccounts(ctx: CommandContext, accounts: ListedAccount[], fromEnv: boolean): void {
  writeLine(ctx.stdout);
  writeLine(ctx.stdout, fromEnv ? `Stored accounts (not used while ${ENV.token} is set):` : 'Accounts (* active; `prospect auth:switch` changes it):');
  for (const account of accounts) {
    const expiry = `${account.expired ? 'expired' : 'expires'} ${utcMinute(account.expiresAt)}`;
    const state = account.refreshToken ? `access token ${expiry}, renewed when used` : account.expired ? `${expiry}: log in again` : expiry;
    const where = account.credentialStore === 'keychain' ? ' (tokens in the OS keychain)' : '';
    writeLine(ctx.stdout, `  ${account.active ? '*' : ' '} ${accountName({ apiBaseUrl: account.server, user: account.user })}: ${state}${where}`);
  }
}

/** No account is active, several are stored: the list, in the shape asked for. */
async function reportAccounts(ctx: CommandContext, stored: StoredAccounts, active: SessionFile | undefined): Promise<void> {
  const accounts = await listAccounts(ctx, stored, active);
  if (ctx.flags.json) printJson(ctx, { usable: false, accounts });
  else printAccounts(ctx, accounts, false);
}

/** Its prefix and a star for every other character, as `gh auth status` shows one: which kind of token, none of the secret. */
function maskToken(token: string): string {
  const prefix = /^[a-z]+_/.exec(token)?.[0] ?? '';
  return prefix + '*'.repeat(Math.min(token.length - prefix.length, 40));
}

interface Status {
  server: string;
  tokenSource: string;
  /** For a stored session: where its tokens are, and the file that holds it (all of it, or all but the tokens). */
  credentialStore?: CredentialStore;
  sessionFile?: string;
  token: string;
  user?: { id: string; email: string; name: string };
  expiresAt?: string;
  refreshToken?: boolean;
  scopes?: string[];
  /** Which token or session made this token (GET /me's `madeWith`), when the server says. */
  madeWith?: string;
  serverSays?: string;
}
