import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CLI_CLIENT_ID, OAUTH_ROUTES, type Scope } from '@prospect/contract';
import type { ApiClient } from '../api-client/api-client.js';
import { ApiHttpError } from '../api-client/api-errors.js';
import { stripControls } from '../api-client/untrusted-text.js';
import { CliError } from '../errors.js';

/**
 * `prospect auth:login --web`: the authorization code flow with PKCE (RFC 7636) for the CLI's own
 * public client, back to a loopback redirect on 127.0.0.1 and a port the system picks (RFC 8252
 * §7.3), which the server matches on any port. Like the device-login client, it prints nothing:
 * the command shows the link and opens the browser (commands/auth-login-web.ts).
 *
 * The listener takes exactly one answer on /callback (a good one, a refusal, or one that does not
 * carry this login's `state`) and closes; it also closes on the deadline or Ctrl-C. Anything else
 * a browser asks for (a favicon) gets a 404 and changes nothing.
 */
export interface LoopbackLogin {
  /** Where the browser goes: the server's authorization endpoint with this login's parameters. */
  authorizeUrl: string;
  redirectUri: string;
  /** Resolves to the tokens, once the browser came back and the code was exchanged. */
  result: Promise<WebLoginTokens>;
  /** Closes the listener (idempotent). */
  close(): void;
}

export interface WebLoginTokens {
  accessToken: string;
  refreshToken?: string;
}

const CALLBACK_PATH = '/callback';

/** The page the browser shows at the end: short, no script, nothing from the request in it. */
const page = (title: string, text: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>` +
  `<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32em;margin:15vh auto;padding:0 1em;color:#222}</style></head>` +
  `<body><h1>${title}</h1><p>${text}</p></body></html>`;

const base64url = (bytes: Buffer) => bytes.toString('base64url');

/** Equal strings, compared in constant time (the state is a secret of this login). */
function sameSecret(given: string, expected: string): boolean {
  const [a, b] = [Buffer.from(given), Buffer.from(expected)];
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function startLoopbackLogin(
  api: ApiClient,
  options: { scopes: readonly Scope[]; timeoutMs: number; signal?: AbortSignal },
): Promise<LoopbackLogin> {
  const state = base64url(randomBytes(32));
  const verifier = base64url(randomBytes(32));
  const challenge = base64url(createHash('sha256').update(verifier).digest());

  let settle!: { resolve: (query: URLSearchParams) => void; reject: (err: Error) => void };
  const answered = new Promise<URLSearchParams>((resolve, reject) => (settle = { resolve, reject }));
  let done = false;

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (done || req.method !== 'GET' || url.pathname !== CALLBACK_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end('Not found.');
      return;
    }
    done = true;
    const query = url.searchParams;
    const stateMatches = sameSecret(query.get('state') ?? '', state);
    const ok = stateMatches && query.has('code') && !query.has('error');
    const [status, body] = ok
      ? [200, page('You are logged in', 'prospect has what it needs. You can close this tab and go back to your terminal.')]
      : [400, page('The login did not complete', 'See your terminal for why. You can close this tab.')];
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', connection: 'close' });
    res.end(body, () => close());
    if (!stateMatches) settle.reject(new CliError("The browser's answer did not carry this login's state, so it was refused (it may not come from this login); nothing was saved. Run the command again."));
    else settle.resolve(query);
  });

  const close = () => {
    done = true;
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    server.close();
    server.closeAllConnections();
  };
  const onAbort = () => {
    close();
    settle.reject(options.signal?.reason instanceof Error ? options.signal.reason : new CliError('Cancelled. Nothing was saved.', 130));
  };
  const timer = setTimeout(() => {
    close();
    settle.reject(new CliError(`No answer from the browser within ${Math.round(options.timeoutMs / 1000)} s; nothing was saved.`, 1, 'Run the command again (--timeout-seconds gives more time).'));
  }, options.timeoutMs);
  options.signal?.addEventListener('abort', onAbort, { once: true });

  // 127.0.0.1, not localhost: the name could resolve elsewhere, and RFC 8252 §8.3 asks for the literal.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}${CALLBACK_PATH}`;
  const authorizeUrl = `${api.baseUrl}${OAUTH_ROUTES.authorize}?${new URLSearchParams({
    response_type: 'code',
    client_id: CLI_CLIENT_ID,
    redirect_uri: redirectUri,
    scope: options.scopes.join(' '),
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })}`;

  const result = answered.then(async (query) => {
    const error = query.get('error');
    if (error) {
      const description = stripControls(query.get('error_description') ?? '').slice(0, 300);
      throw new CliError(`${new URL(api.baseUrl).host} did not log you in: ${error === 'access_denied' ? 'the request was denied' : stripControls(error).slice(0, 60)}${description ? ` (${description})` : ''}. Nothing was saved.`);
    }
    const code = query.get('code');
    if (!code) throw new CliError(`The browser came back from ${new URL(api.baseUrl).host} without a code; nothing was saved.`);
    return exchange(api, { code, redirectUri, verifier, signal: options.signal });
  });
  // Unobserved until the command awaits it; a rejection meanwhile is not "unhandled".
  result.catch(() => undefined);
  return { authorizeUrl, redirectUri, result, close };
}

/** POST /oauth/token (RFC 6749 §4.1.3): the code, its redirect URI and the PKCE verifier, for the CLI's public client. */
async function exchange(api: ApiClient, input: { code: string; redirectUri: string; verifier: string; signal?: AbortSignal }): Promise<WebLoginTokens> {
  try {
    const { body } = await api.request('POST', OAUTH_ROUTES.token, {
      form: { grant_type: 'authorization_code', client_id: CLI_CLIENT_ID, code: input.code, redirect_uri: input.redirectUri, code_verifier: input.verifier },
      signal: input.signal,
    });
    const answer = body as { access_token?: unknown; refresh_token?: unknown };
    if (typeof answer?.access_token !== 'string') throw new CliError(`${api.baseUrl}${OAUTH_ROUTES.token} answered without an access token.`);
    return { accessToken: answer.access_token, ...(typeof answer.refresh_token === 'string' ? { refreshToken: answer.refresh_token } : {}) };
  } catch (err) {
    if (err instanceof ApiHttpError && err.status < 500) throw new CliError(`${new URL(api.baseUrl).host} refused the login's code: ${err.message} Nothing was saved.`);
    throw err;
  }
}
