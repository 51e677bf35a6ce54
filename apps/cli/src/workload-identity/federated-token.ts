import { readFile } from 'node:fs/promises';
import { type FetchLike, httpTransport } from '../api-client/http-transport.js';
import { describeNetworkError, MAX_ANSWER_BYTES, readCapped } from '../api-client/network.js';
import { stripControls } from '../api-client/untrusted-text.js';
import { CliError, EXIT, usageError } from '../errors.js';

/**
 * Where a CI job's own OIDC token comes from (`auth:login --federated-token <file|-|github>`):
 * a file the CI wrote (GitLab's `id_tokens:` as a file variable), stdin, or GitHub Actions'
 * token service, asked for the audience the service expects. It prints nothing; errors are one
 * line each (a CliError), never the token.
 */
export type FederatedTokenSource = { kind: 'file'; path: string } | { kind: 'stdin' } | { kind: 'github' };

/** The variables GitHub Actions sets for a job given `permissions: id-token: write`. */
export const GITHUB_ID_TOKEN_ENV = { url: 'ACTIONS_ID_TOKEN_REQUEST_URL', token: 'ACTIONS_ID_TOKEN_REQUEST_TOKEN' } as const;

/** A JWT is three base64url parts; anything longer than this is not a CI's ID token. */
const MAX_TOKEN_LENGTH = 16_384;

export function parseFederatedTokenFlag(value: unknown): FederatedTokenSource {
  if (typeof value !== 'string' || !value.trim()) {
    throw usageError('--federated-token needs where the CI token is: a file, - for stdin, or github (GitHub Actions).');
  }
  const source = value.trim();
  if (source === '-') return { kind: 'stdin' };
  if (source === 'github') return { kind: 'github' };
  return { kind: 'file', path: source };
}

export interface FederatedTokenContext {
  env: NodeJS.ProcessEnv;
  stdin: NodeJS.ReadStream;
  /** Default: httpTransport(env), through the proxies the environment names, as every request of the CLI. */
  fetch?: FetchLike;
  signal: AbortSignal;
}

/**
 * The CI token, checked to look like a JWT (the server verifies it). `audience` is only asked
 * for, and only then, when GitHub mints the token: a file or stdin holds one already minted.
 */
export async function readFederatedToken(source: FederatedTokenSource, ctx: FederatedTokenContext, audience: () => Promise<string>): Promise<string> {
  const where = source.kind === 'file' ? source.path : source.kind === 'stdin' ? 'stdin' : 'GitHub Actions';
  const token = (
    source.kind === 'file' ? await readTokenFile(source.path) : source.kind === 'stdin' ? await readStdin(ctx.stdin) : await fetchGithubIdToken(ctx, githubTokenService(ctx.env), await audience())
  ).trim();
  if (!token) throw usageError(`No CI token in ${where}: it is empty.`);
  if (token.length > MAX_TOKEN_LENGTH || !/^[\w-]+\.[\w-]+\.[\w-]*$/.test(token)) {
    throw usageError(`What ${where} holds is not a JWT (three base64url parts separated by dots): give the CI's OIDC token itself.`);
  }
  return token;
}

async function readTokenFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (code ?? 'unreadable');
    // One line, what to give in it: the command adds its usage line under it, as to its other usage errors.
    throw usageError(`Cannot read the CI token from ${path} (${why}): give a file that holds it, - to read it from stdin, or github inside GitHub Actions.`);
  }
}

/** Never a prompt: a CI token is piped (`<<< "$TOKEN"`), not typed; a terminal on stdin is a mistake said in one line. */
async function readStdin(stdin: NodeJS.ReadStream): Promise<string> {
  if (stdin.isTTY) throw usageError('--federated-token - reads the CI token from stdin, which is a terminal here: pipe it in (<<< "$CI_TOKEN") or give a file.');
  let text = '';
  for await (const chunk of stdin) {
    text += chunk;
    if (text.length > MAX_TOKEN_LENGTH * 2) break;
  }
  return text;
}

export interface GithubTokenService {
  requestUrl: string;
  requestToken: string;
}

/**
 * Where GitHub Actions mints a job's OIDC token, from the two variables it sets. Without
 * `permissions: id-token: write` the job has neither: checked before anything else is asked.
 */
export function githubTokenService(env: NodeJS.ProcessEnv): GithubTokenService {
  const requestUrl = env[GITHUB_ID_TOKEN_ENV.url];
  const requestToken = env[GITHUB_ID_TOKEN_ENV.token];
  if (!requestUrl || !requestToken) {
    const missing = [!requestUrl && GITHUB_ID_TOKEN_ENV.url, !requestToken && GITHUB_ID_TOKEN_ENV.token].filter(Boolean).join(' and ');
    throw new CliError(
      `${missing} ${missing.includes(' and ') ? 'are' : 'is'} not set: this job cannot ask GitHub Actions for an OIDC token.`,
      EXIT.failure,
      'Give the job (or the workflow) `permissions: id-token: write`; outside GitHub Actions, pass the token with --federated-token <file|->.',
    );
  }
  return { requestUrl, requestToken };
}

/**
 * GitHub Actions' token service: GET $ACTIONS_ID_TOKEN_REQUEST_URL with `audience` added,
 * `Authorization: bearer $ACTIONS_ID_TOKEN_REQUEST_TOKEN`, answering `{"value": "<jwt>"}`
 * (what actions/core's getIDToken does).
 */
export async function fetchGithubIdToken(ctx: FederatedTokenContext, service: GithubTokenService, audience: string): Promise<string> {
  const { requestUrl, requestToken } = service;
  let url: URL;
  try {
    url = new URL(requestUrl);
  } catch {
    throw new CliError(`${GITHUB_ID_TOKEN_ENV.url} is not a URL.`);
  }
  url.searchParams.set('audience', audience);
  let res: Response;
  try {
    res = await (ctx.fetch ?? httpTransport(ctx.env))(url.href, {
      headers: { authorization: `bearer ${requestToken}`, accept: 'application/json; api-version=2.0' },
      redirect: 'manual',
      signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(15_000)]),
    });
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    throw new CliError(`Cannot reach GitHub Actions' token service at ${url.origin} (${describeNetworkError(err)}).`);
  }
  const text = await readCapped(res, MAX_ANSWER_BYTES).catch(() => '');
  if (!res.ok) {
    const said = stripControls(messageOf(text) ?? '').slice(0, 200);
    throw new CliError(`GitHub Actions' token service refused to mint an OIDC token (HTTP ${res.status}${said ? `: ${said}` : ''}).`, EXIT.failure, 'Check that the job has `permissions: id-token: write`.');
  }
  const value = safeJson(text)?.value;
  if (typeof value !== 'string') throw new CliError(`GitHub Actions' token service answered without a token (no "value").`);
  return value;
}

function messageOf(text: string): string | undefined {
  const message = safeJson(text)?.message;
  return typeof message === 'string' ? message : undefined;
}

function safeJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
