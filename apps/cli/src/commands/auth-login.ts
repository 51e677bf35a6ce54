import { CLI_DEFAULT_SCOPES, CLI_SCOPES, DEFAULT_API_BASE_URL, ENV, ROUTES, type Scope, SERVICE_ACCOUNT_SCOPES, type SessionFile } from '@prospect/contract';
import type { ApiClient } from '../api-client/api-client.js';
import { ApiHttpError } from '../api-client/api-errors.js';
import { normalizeBaseUrl } from '../api-client/base-url.js';
import { notServedUnderPath } from '../api-client/login-hints.js';
import { type CommandContext, envToken, requestedApiUrl, writeLine } from '../context.js';
import { apiClientFor, serverClockOf } from '../session/session-context.js';
import type { DeviceLoginResult } from '../device-login/device-login-client.js';
import { CliError, FileSystemError, usageError } from '../errors.js';
import { humanDuration } from '../format.js';
import { revokeSession } from '../session/refresh.js';
import { Accounts, allOf, sameAccount } from '../session/accounts.js';
import { describeEntry, inKeychain, keptIn } from '../session/kept-secrets.js';
import { KeychainError } from '../session/keychain.js';
import { accountName, commandFor } from './account-choice.js';
import { parseScopesFlag } from './scopes-flag.js';
import { apiUrlFlag, type Command } from './command.js';
import { chooseCredentialStore, CREDENTIAL_STORE_ENV, requestedCredentialStore, secureStorageFlag } from './credential-store-choice.js';
import { person } from './session-report.js';

export const loginCommand: Command = {
  name: 'auth:login',
  description: 'Log in with your browser (device login), or with a token',
  usage: `
  Usage
    $ prospect auth:login [--api-url <url>] [--timeout-seconds <n>] [--scopes <list>]
    $ prospect auth:login --web              (the browser signs in and comes back to this machine)
    $ prospect auth:login --token <token>
    $ prospect auth:login --token -          (reads the token from stdin)
    $ prospect auth:login --service-account <clientId> --federated-token <file|-|github>   (in CI)

  Options
    --api-url <url>          The Prospect server (default: $PROSPECT_API_BASE_URL or ${DEFAULT_API_BASE_URL})
    --hostname <url>         The same as --api-url (gh's name for it)
    --token <token|->        Log in with a token from <server>/settings/tokens instead of the browser
    --web                    Log in in the browser of this machine, which comes back to a port of
                             127.0.0.1 (OAuth with PKCE) instead of showing a code; not over SSH
    --scopes <list>          What the session may do, comma-separated, of ${CLI_SCOPES.join(', ')}
                             (default: ${CLI_DEFAULT_SCOPES.join(',')}). Administrators add admin to
                             administer: approved in sudo mode, it lasts a few hours, then the
                             session keeps the rest (sign in again with --scopes ${CLI_SCOPES.join(',')})
    --timeout-seconds <n>    How long to wait for approval (at most the code's lifetime)
    --no-browser             Do not open a browser; just show the link and code
    --no-qr                  Do not show the QR code
    --secure-storage         Keep the access and refresh tokens in the OS keychain (macOS Keychain,
                             Windows Credential Manager, the Secret Service on Linux); the session
                             file keeps the rest. Also ${CREDENTIAL_STORE_ENV}=keychain. Where no
                             keychain can be used, it says so and keeps them in the file.
                             --no-secure-storage: in the file (the default)

  In CI, as a service account of an organization (no stored secret; see docs/ci.md)
    --service-account <id>   The service account's client ID (psa_…) to log in as
    --federated-token <src>  The CI job's own OIDC token, exchanged for a token of at most an
                             hour (no refresh: run the exchange again): a file, - for stdin, or
                             github to ask GitHub Actions for one (needs the job's
                             \`permissions: id-token: write\`)
    --audience <aud>         With github: the audience to ask for (default: the server's issuer)
    --scopes <list>          Of ${SERVICE_ACCOUNT_SCOPES.join(', ')} (default: all the account holds)
    --no-store               Save nothing: print the token alone on stdout, for
                             export ${ENV.token}=$(prospect auth:login … --no-store)
                             (--store, the default: the session file, as any login)

  Logging in to another server, or as another person, keeps the accounts you were
  logged in to, and the new one becomes the active one: \`prospect auth:status\` lists
  them, \`prospect auth:switch\` changes which one the commands use.
`,
  flags: {
    ...apiUrlFlag,
    hostname: { type: 'string' },
    token: { type: 'string' },
    web: { type: 'boolean', default: false },
    scopes: { type: 'string' },
    timeoutSeconds: { type: 'string' },
    browser: { type: 'boolean', default: true },
    qr: { type: 'boolean', default: true },
    ...secureStorageFlag,
    serviceAccount: { type: 'string' },
    federatedToken: { type: 'string' },
    audience: { type: 'string' },
    store: { type: 'boolean' },
  },
  requiresAuth: false,
  async run(ctx: CommandContext) {
    if (ctx.flags.serviceAccount !== undefined || ctx.flags.federatedToken !== undefined || ctx.flags.audience !== undefined || ctx.flags.store !== undefined) {
      takeHostnameAsApiUrl(ctx);
      // Loaded only here, as device login is: the other commands start fast.
      const { loginAsServiceAccount } = await import('./auth-login-service-account.js');
      return loginAsServiceAccount(ctx, apiClientFor(ctx, normalizeBaseUrl(requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL)));
    }
    if (envToken(ctx)) {
      writeLine(ctx.stderr, 'Warning: PROSPECT_TOKEN is set, and commands use it instead of the session you are logging in to. Unset it to use this session.');
    }
    takeHostnameAsApiUrl(ctx);
    const baseUrl = normalizeBaseUrl(requestedApiUrl(ctx) ?? DEFAULT_API_BASE_URL);
    const api = apiClientFor(ctx, baseUrl);
    const timeoutSeconds = parseTimeout(ctx.flags.timeoutSeconds);
    const scopes = parseScopesFlag(ctx.flags.scopes);
    if (scopes && typeof ctx.flags.token === 'string') {
      throw usageError('--scopes is for the browser login: a token has the scopes it was made with.');
    }
    // Before the server is asked anything: a login it redeems that cannot be saved here
    // would be a live session nobody holds.
    await ctx.store.checkWritable().catch((err: unknown) => {
      if (!(err instanceof FileSystemError)) throw err;
      throw new CliError(`Cannot log in: ${err.path} cannot be written (${err.reason}); set ${ENV.configDir} to a directory you can write to.`);
    });
    // Also before the server is asked: a bad PROSPECT_CREDENTIAL_STORE, and the stored accounts,
    // read now so that a keychain holding them out of reach stops the login here, not after it.
    requestedCredentialStore(ctx);
    const accounts = new Accounts(ctx.store);
    const storedBefore = allOf(await accounts.read());
    if (ctx.flags.web === true && typeof ctx.flags.token === 'string') throw usageError('--web and --token are two ways to log in: give one.');
    const session =
      typeof ctx.flags.token === 'string'
        ? await loginWithToken(ctx, api, ctx.flags.token)
        : ctx.flags.web === true
          ? await loginWithWeb(ctx, api, timeoutSeconds, scopes)
          : await loginWithDevice(ctx, api, timeoutSeconds, scopes);
    // Indented like the Ink view above them, when there is one (a device login at a terminal).
    const inkView = ctx.interactive && typeof ctx.flags.token !== 'string' && ctx.flags.web !== true;
    const indent = inkView ? ' ' : '';
    let kept = keptIn(session, chooseCredentialStore(ctx, storedBefore.find((stored) => sameAccount(stored, session))));
    let saved: Awaited<ReturnType<Accounts['logIn']>>;
    try {
      try {
        // Under the session's lock: a refresh in another process neither overwrites nor removes it.
        saved = await accounts.logIn(kept);
      } catch (err) {
        // The keychain asked for cannot be used: the login is not failed for it (issue 48), the
        // session goes to the file, and the person is told, with how to use the keychain after all.
        if (!(err instanceof KeychainError) || !inKeychain(kept)) throw err;
        // Short lines: a long one would wrap mid-word at the terminal's edge.
        writeLine(ctx.stderr, `${indent}The OS keychain cannot be used: ${err.reason}.`);
        writeLine(ctx.stderr, `${indent}The tokens are saved in the session file instead, readable by you only.`);
        writeLine(ctx.stderr, `${indent}To use the keychain: ${err.fix}, then log in with --secure-storage.`);
        kept = keptIn(session, 'file');
        saved = await accounts.logIn(kept);
      }
    } catch (err) {
      // The directory failed since the check (the disk filled up): a device login is ended on
      // the server rather than left alive there; a --token token is the person's own to keep.
      if (typeof ctx.flags.token === 'string' || !(err instanceof CliError)) throw err;
      const ended = await revokeSession(apiClientFor(ctx, baseUrl, 3_000), session);
      throw new CliError(err.message, 1, ended ? 'The new session was signed out on the server again; log in once this is fixed.' : err.hint);
    }
    for (const replaced of saved.replaced.filter((old) => old.accessToken !== session.accessToken)) {
      // The replaced session (the same person on the same server) ends on its server too, best
      // effort: a refresh token left behind would keep a session alive nobody uses.
      const ended = await revokeSession(apiClientFor(ctx, replaced.apiBaseUrl, 3_000), replaced);
      writeLine(ctx.stderr, `${indent}Replaced the session of ${person(replaced.user)} on ${replaced.apiBaseUrl}${ended ? ' (signed out on the server)' : ''}.`);
    }
    // Logging in as another person, or to another server, keeps the account active until now.
    if (saved.kept) writeLine(ctx.stderr, `${indent}Kept the session of ${accountName(saved.kept)}: switch back with \`${commandFor('auth:switch', saved.kept)}\`.`);
    // The Ink view says it itself.
    if (!inkView) {
      writeLine(ctx.stdout, `Logged in as ${session.user.name} <${session.user.email}> on ${session.apiBaseUrl}.`);
    }
    // By the server's clock, which set expiresAt: this machine's may be minutes or hours off.
    const lifetime = humanDuration(Date.parse(session.expiresAt) - (await serverClockOf(ctx).now(session.apiBaseUrl)));
    if (inKeychain(kept)) writeLine(ctx.stderr, `${indent}Tokens saved to ${describeEntry(kept)}.`);
    if (ctx.interactive) {
      // Two short lines: one long line would wrap mid-word at the terminal's edge.
      writeLine(ctx.stderr, `${indent}Session saved to ${ctx.store.path}.`);
      writeLine(ctx.stderr, `${indent}${session.refreshToken ? `The access token lasts ${lifetime} and is renewed automatically` : `It expires in ${lifetime}`}.`);
    } else {
      writeLine(ctx.stderr, `Session saved to ${ctx.store.path} (${session.refreshToken ? `the access token lasts ${lifetime} and is renewed automatically` : `expires in ${lifetime}`}).`);
    }
  },
};

/** `--hostname`, as gh users type it, is `--api-url`; both, naming different servers, is a usage error. */
function takeHostnameAsApiUrl(ctx: CommandContext): void {
  const { hostname, apiUrl } = ctx.flags;
  if (hostname === undefined) return;
  if (typeof hostname !== 'string' || !hostname.trim()) throw usageError('--hostname needs the server, as --api-url does: --hostname https://prospect.example.com');
  if (typeof apiUrl === 'string' && apiUrl.trim() && apiUrl.trim() !== hostname.trim()) {
    throw usageError(`--hostname is another name for --api-url; given both, they must agree (${JSON.stringify(hostname)}, ${JSON.stringify(apiUrl)}).`);
  }
  ctx.flags.apiUrl = hostname;
}

export function parseTimeout(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (typeof value !== 'string' || !/^\d+$/.test(value.trim()) || n <= 0) {
    throw usageError(`--timeout-seconds must be a whole number of seconds, got ${JSON.stringify(value)}.`);
  }
  return n;
}

/**
 * The session of what the server just granted. `createdAt` is when, by the server's clock (its
 * answer has just measured it), as `expiresAt` is: the two measure the pair's lifetime, which
 * sets how early it is renewed (session/refresh.ts refreshAheadMs).
 */
async function toSession(ctx: CommandContext, apiBaseUrl: string, result: Omit<DeviceLoginResult, 'refreshToken'> & { refreshToken?: string }): Promise<SessionFile> {
  const obtainedAt = await serverClockOf(ctx).now(apiBaseUrl);
  return {
    accessToken: result.accessToken,
    ...(result.refreshToken ? { refreshToken: result.refreshToken } : {}),
    apiBaseUrl,
    user: result.user,
    expiresAt: result.expiresAt,
    createdAt: new Date(obtainedAt).toISOString(),
  };
}

/** Device login. Its code, and Ink, load only here, so the other commands start fast. */
export async function loginWithDevice(
  ctx: CommandContext,
  api: ApiClient,
  timeoutSeconds: number | undefined,
  scopes: Scope[] | undefined,
  approvedText?: (user: SessionFile['user']) => string,
): Promise<SessionFile> {
  const { runDeviceLogin } = await import('./auth-login-device.js');
  return toSession(ctx, api.baseUrl, await runDeviceLogin(ctx, api, timeoutSeconds, scopes, approvedText));
}

/** `--web`: the authorization code flow to a loopback port; then GET /me says who the tokens are for. */
export async function loginWithWeb(ctx: CommandContext, api: ApiClient, timeoutSeconds: number | undefined, scopes: Scope[] | undefined): Promise<SessionFile> {
  const { runWebLogin } = await import('./auth-login-web.js');
  const tokens = await runWebLogin(ctx, api, timeoutSeconds, scopes);
  const me = await api.me(tokens.accessToken);
  return toSession(ctx, api.baseUrl, { ...tokens, user: me.user, expiresAt: me.expiresAt });
}

/** `--token`: accepted only once GET /api/cli/auth/me verifies it (seed §5). */
async function loginWithToken(ctx: CommandContext, api: ApiClient, flag: string): Promise<SessionFile> {
  const token = (flag === '-' ? await readTokenFromStdin(ctx) : flag).trim();
  if (!token) throw usageError('No token given.', `Create one at ${api.baseUrl}${ROUTES.tokensPage}`);
  if (/\s/.test(token)) throw usageError('A token has no spaces: check what you pasted.');
  try {
    const me = await api.me(token);
    // A service account's short-lived token is no person's session (issue #45): CI passes it in PROSPECT_TOKEN.
    if (me.serviceAccount) throw usageError(`This is a token of the service account ${me.user.name} of ${me.serviceAccount.organization.name}, not a person's: pass it in ${ENV.token} instead of saving it.`);
    return await toSession(ctx, api.baseUrl, { accessToken: token, user: me.user, expiresAt: me.expiresAt });
  } catch (err) {
    if (err instanceof ApiHttpError) {
      const elsewhere = notServedUnderPath(api.baseUrl, ROUTES.me, err.status, { env: ctx.env, token: true });
      if (elsewhere) throw elsewhere;
    }
    if (err instanceof ApiHttpError && err.status === 401) {
      const why = { expired: 'it has expired', revoked: 'it was revoked', disabled: 'its account is disabled', unknown: 'it is not a valid token' }[err.tokenProblem ?? 'unknown'];
      throw new CliError(`${api.baseUrl} refused the token: ${why}. Nothing was saved.`, 1, `Create a new one at ${api.baseUrl}${ROUTES.tokensPage}`);
    }
    throw err;
  }
}

async function readTokenFromStdin(ctx: CommandContext): Promise<string> {
  if (ctx.stdin.isTTY) {
    const { readSecretLine } = await import('../secret-prompt.js');
    return readSecretLine(ctx.stdin, ctx.stderr, 'Paste your token (it will not be shown) and press Enter: ');
  }
  let text = '';
  for await (const chunk of ctx.stdin) text += chunk;
  return text;
}

