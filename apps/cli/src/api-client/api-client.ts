import { DEFAULT_API_BASE_URL, ENV, ErrorBodySchema, OAUTH_ROUTES, ROUTES, type User, UserSchema } from '@prospect/contract';
// The star import lets bundlers drop what is unused ('{ z }' keeps all of zod).
import * as z from 'zod/mini';
import { randomBytes } from 'node:crypto';
import { CliError, EXIT } from '../errors.js';
import { VERSION } from '../version.js';
import { stripControls, stripControlsDeep } from './untrusted-text.js';

/** An HTTP answer that is not 2xx, with the server's error body when it sent one. */
/** Why the server refused a bearer token (RFC 6750's error_description, as the API words it). */
export type TokenProblem = 'expired' | 'revoked' | 'disabled' | 'unknown';

export class ApiHttpError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    message: string,
    readonly headers: Headers,
    /** The reason phrase of the status line, as the server sent it (may be empty). */
    readonly statusText = '',
  ) {
    super(message);
  }

  /**
   * Why a bearer token was refused, from the RFC 6750 challenge
   * (`WWW-Authenticate: Bearer error="invalid_token", error_description="token expired"`).
   */
  get tokenProblem(): TokenProblem | undefined {
    if (this.status !== 401) return undefined;
    const description = /error_description="([^"]*)"/i.exec(this.headers.get('www-authenticate') ?? '')?.[1] ?? '';
    if (/disabled/i.test(description)) return 'disabled';
    if (/expired/i.test(description)) return 'expired';
    if (/revoked/i.test(description)) return 'revoked';
    return 'unknown';
  }
}

/**
 * A 401 for the stored session's token, as one line that says why and what to
 * do. Exit 4: the user must log in again.
 */
export function sessionTokenRejected(
  err: ApiHttpError,
  baseUrl: string,
  options: { done?: string; env?: NodeJS.ProcessEnv; fromEnv?: boolean } = {},
): CliError {
  if (err.tokenProblem === 'disabled') {
    // Logging in again would not help: only an administrator can.
    return new CliError(`Your account is disabled on ${baseUrl}${options.done ? `; ${options.done}` : ''} — ask an administrator of that service to enable it.`, EXIT.authRequired);
  }
  if (options.fromEnv) {
    // Logging in would not help: PROSPECT_TOKEN beats any session.
    const problem = err.tokenProblem === 'unknown' || !err.tokenProblem ? 'not a valid token' : err.tokenProblem;
    return new CliError(`${baseUrl} refused the token in ${ENV.token}: it is ${problem}.`, EXIT.authRequired, `Set ${ENV.token} to a valid token, or unset it to use your session.`);
  }
  const why = {
    expired: 'Your session has expired on the server',
    revoked: 'Your token was revoked (logged out elsewhere, or by an admin)',
    disabled: 'Your account is disabled',
    unknown: 'The server does not recognise your token',
  }[err.tokenProblem ?? 'unknown'];
  const { done, env } = options;
  return new CliError(`${why} (${baseUrl})${done ? `; ${done}` : ''} — run \`${loginCommandLine(baseUrl, { env })}\`.`, EXIT.authRequired);
}

/**
 * The command that logs in to `baseUrl`, for every hint that says to log in
 * (`token`: with `--token -`). `--api-url` is left out only when a bare
 * `prospect auth:login` reaches that backend anyway: it is the default one, and
 * PROSPECT_API_BASE_URL (when `env` is given) does not point elsewhere. Without
 * a backend, the bare command.
 */
export function loginCommandLine(baseUrl?: string, options: { env?: NodeJS.ProcessEnv; token?: boolean } = {}): string {
  let line = 'prospect auth:login';
  if (baseUrl !== undefined) {
    const url = canonicalBaseUrl(baseUrl);
    const bare = canonicalBaseUrl(options.env?.[ENV.apiBaseUrl] || DEFAULT_API_BASE_URL);
    if (url !== DEFAULT_API_BASE_URL || url !== bare) line += ` --api-url ${shellWord(url)}`;
  }
  return options.token ? `${line} --token -` : line;
}

/** A hint never throws: a backend that is not a URL is shown as given. */
function canonicalBaseUrl(input: string): string {
  try {
    return normalizeBaseUrl(input);
  } catch {
    return input.trim();
  }
}

/** Quoted for a POSIX shell when it holds anything but plain URL characters, so the hint can be pasted as it is. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./~-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * A route of the service was not found under a base URL with a path (`https://host/prefix`): the
 * service is not served there, which is no news about device login or tokens. The hint names the
 * base the service usually has, the server's origin, with the command that logs in to it
 * (`token`: with `--token -`). Undefined for a base without a path: there a 404 means what it says.
 */
export function notServedUnderPath(baseUrl: string, route: string, status: number, options: { env?: NodeJS.ProcessEnv; token?: boolean } = {}): CliError | undefined {
  const { origin, pathname } = new URL(baseUrl);
  if (status !== 404 || pathname === '/' || pathname === '') return undefined;
  return new CliError(
    `${baseUrl} is not the base URL of a Prospect service: ${baseUrl}${route} was not found (HTTP 404).`,
    EXIT.failure,
    `Its base is usually the server's address, without a path: did you mean ${origin}? Then run \`${loginCommandLine(origin, options)}\`.`,
  );
}

/** The server could not be reached at all (refused, DNS, reset, timeout). */
export class ApiUnreachableError extends CliError {
  constructor(readonly baseUrl: string, cause: string) {
    super(`Cannot reach ${baseUrl} (${cause}).`, 1, 'Check the address (--api-url or PROSPECT_API_BASE_URL) and that the server is running.');
  }
}

export type FetchLike = typeof fetch;

/** Learns the server's clock from its answers (session/server-clock.ts). */
export interface ServerTimeWitness {
  /** This machine's clock. */
  localNow(): number;
  /** An answer's headers (`Date`), with when its request left and its answer came, by localNow. Never throws. */
  observe(baseUrl: string, headers: Headers, sentAt: number, receivedAt: number): Promise<void>;
}

export interface ApiClientOptions {
  baseUrl: string;
  fetch?: FetchLike;
  /** Per request; the logout call uses a short one. */
  timeoutMs?: number;
  /** Told of every answer, so expiries are judged by the server's clock. */
  serverClock?: ServerTimeWitness;
}

/**
 * A normalized backend URL: http(s), no trailing slash. Throws a usage error otherwise, with the
 * URL meant when it can be told: `localhost:3000` (no scheme) is `http://localhost:3000`, and
 * `http://localhost:3000/api` (a path of the service's own) is `http://localhost:3000`.
 */
export function normalizeBaseUrl(input: string): string {
  const text = input.trim();
  if (!/^[a-z][a-z\d+.-]*:\/\//i.test(text)) {
    const meant = withSchemeAdded(text);
    if (meant) throw new CliError(`${JSON.stringify(text)} has no scheme: did you mean ${serviceBaseOf(meant)}?`, EXIT.usage);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new CliError(`Not a URL: ${JSON.stringify(input)}.`, EXIT.usage, 'Pass the backend as --api-url https://host');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new CliError(`The backend must be an http(s) URL, not ${url.protocol}`, EXIT.usage);
  }
  const given = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  const base = serviceBaseOf(url);
  if (base !== given) {
    throw new CliError(`${given} is a path of the Prospect service, not its base URL: did you mean ${base}?`, EXIT.usage);
  }
  return given;
}

/**
 * The first path segment of every route and page of the service (`api`, `oauth`, `.well-known`,
 * `device`, `settings`, …): a base URL, which those hang from, never holds one. Any other path
 * is taken as given: a server may well be served under a prefix (`https://corp.example/prospect`).
 */
const SERVICE_PATH_ROOTS = new Set([...Object.values(ROUTES), ...Object.values(OAUTH_ROUTES)].map((route) => route.split('/')[1]!));

/** The backend `url` names: its origin and path, cut before the first segment that is one of the service's own. */
function serviceBaseOf(url: URL): string {
  const segments = url.pathname.split('/').filter(Boolean);
  const own = segments.findIndex((segment) => SERVICE_PATH_ROOTS.has(segment));
  return url.origin + (own < 0 ? segments : segments.slice(0, own)).map((segment) => `/${segment}`).join('');
}

/**
 * `host`, `host:port` or `host:port/path` typed without a scheme, as the URL meant: http for this
 * machine (the loopback names and addresses, where a development server runs without TLS), https
 * for anything else. Undefined for what is not a host (another scheme's URL, a user name, spaces).
 */
function withSchemeAdded(text: string): URL | undefined {
  if (!/^(\[[\da-f:.]+\]|[^/?#:@[\]\s]+)(:\d+)?([/?#]\S*)?$/i.test(text)) return undefined;
  try {
    const { hostname } = new URL(`http://${text}`);
    const loopback = hostname === 'localhost' || hostname.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(hostname) || hostname === '[::1]';
    // Parsed again with its own scheme: `host:80` keeps its port under https.
    return new URL(`${loopback ? 'http' : 'https'}://${text}`);
  } catch {
    return undefined;
  }
}

/** Who is asking, on every request: the server's approval and tokens pages show it. */
export const USER_AGENT = `prospect-cli/${VERSION} (${process.platform}; node ${process.versions.node})`;

/**
 * The W3C trace context this command's requests carry (`traceparent`), so the server's spans of
 * one command form one trace: the trace of TRACEPARENT when the environment holds a valid one (a
 * CI job's or a script's, whose flags are kept), else a new trace for this invocation. Each
 * request is a span of its own (a new parent id). Fixed on first use: one command, one trace.
 */
let commandTrace: { traceId: string; flags: string } | undefined;

/** `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`; ids of zeros and version ff are invalid; a later version may add fields. */
const TRACEPARENT = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})(-.*)?$/;

function traceparent(): string {
  commandTrace ??= traceOf(process.env.TRACEPARENT) ?? { traceId: nonZeroHex(16), flags: '01' };
  return `00-${commandTrace.traceId}-${nonZeroHex(8)}-${commandTrace.flags}`;
}

function traceOf(given: string | undefined): { traceId: string; flags: string } | undefined {
  const match = TRACEPARENT.exec(given?.trim() ?? '');
  if (!match) return undefined;
  const [, version, traceId, parentId, flags, rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined) || /^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return undefined;
  return { traceId: traceId!, flags: flags! };
}

function nonZeroHex(bytes: number): string {
  for (;;) {
    const hex = randomBytes(bytes).toString('hex');
    if (!/^0+$/.test(hex)) return hex;
  }
}

/** Every answer of the API is a small JSON document; a bigger one is refused, not buffered. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** The body as text, refusing (and cancelling) past `limit` bytes, whatever Content-Length claims. */
async function readCapped(res: Response, limit: number): Promise<string> {
  const tooLarge = () => new CliError(`The server's answer is larger than ${limit / 1024 / 1024} MiB; refusing to read it.`, 1, 'Is --api-url pointing at a Prospect server?');
  if (Number(res.headers.get('content-length') ?? 0) > limit) {
    await res.body?.cancel();
    throw tooLarge();
  }
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    // Leaving the loop cancels the stream: the rest is never read.
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The Prospect API over fetch: JSON in, JSON out, one error type per way it can fail. */
export class ApiClient {
  readonly baseUrl: string;
  private readonly fetchImpl: FetchLike;
  private readonly timeoutMs: number;
  private readonly serverClock?: ServerTimeWitness;

  constructor(options: ApiClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.fetchImpl = options.fetch ?? fetch;
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.serverClock = options.serverClock;
  }

  /**
   * `headers`: more request headers (`prospect api -H`), validated by the caller. They replace
   * the defaults of the same name, and a name given twice is sent with both values; the token's
   * Authorization is set last, so no extra header can replace it.
   */
  async request(
    method: string,
    path: string,
    options: {
      body?: unknown;
      /** A form-encoded body instead (the OAuth endpoints). */
      form?: Record<string, string>;
      token?: string;
      signal?: AbortSignal;
      timeoutMs?: number;
      headers?: ReadonlyArray<readonly [string, string]>;
    } = {},
  ): Promise<{ status: number; statusText: string; body: unknown; headers: Headers }> {
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': USER_AGENT, traceparent: traceparent() };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const extra = new Set<string>();
    for (const [name, value] of options.headers ?? []) {
      const key = name.toLowerCase();
      headers[key] = extra.has(key) ? `${headers[key]}, ${value}` : value;
      extra.add(key);
    }
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    let res: Response;
    const sentAt = this.serverClock?.localNow();
    try {
      res = await this.fetchImpl(this.baseUrl + path, {
        method,
        headers,
        body: options.form !== undefined ? new URLSearchParams(options.form).toString() : options.body === undefined ? undefined : JSON.stringify(options.body),
        signal,
        // Followed, a redirect would carry the body (a refresh token, a device code) and the
        // token to wherever the server points, and another origin's 401 would end the session.
        redirect: 'manual',
      });
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason ?? err;
      throw new ApiUnreachableError(this.baseUrl, describeNetworkError(err));
    }
    // Every answer tells the server's time, a refusal's as much as a success's.
    if (this.serverClock) await this.serverClock.observe(this.baseUrl, res.headers, sentAt!, this.serverClock.localNow());
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      throw new ApiHttpError(
        res.status,
        undefined,
        `${method} ${path} was redirected (HTTP ${res.status}) to ${redirectOrigin(res.headers.get('location'), this.baseUrl + path)}; prospect follows no redirect, so nothing was sent there.`,
        res.headers,
        res.statusText,
      );
    }
    let text: string;
    try {
      text = await readCapped(res, MAX_ANSWER_BYTES);
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new ApiUnreachableError(this.baseUrl, describeNetworkError(err));
    }
    let body: unknown = undefined;
    if (text) {
      try {
        // Nothing the server says reaches the terminal with control characters in it.
        body = stripControlsDeep(JSON.parse(text));
      } catch {
        if (res.ok) throw new CliError(`${this.baseUrl}${path} answered with something that is not JSON.`, 1, 'Is --api-url pointing at a Prospect server?');
      }
    }
    if (!res.ok) {
      const error = ErrorBodySchema.safeParse(body);
      const message = error.success
        ? error.data.message
        : res.status === 503
          ? `${new URL(this.baseUrl).host} is briefly unavailable (HTTP 503); try again in a few seconds.`
          : `${method} ${path} failed with HTTP ${res.status}.`;
      throw new ApiHttpError(res.status, error.success ? error.data.error : undefined, message, res.headers, res.statusText);
    }
    return { status: res.status, statusText: res.statusText, body, headers: res.headers };
  }

  /**
   * GET /api/cli/auth/me, normalized from any of the seed's three variants (§4.3): who the token
   * is, what it may do when the server says (`X-OAuth-Scopes`, as GitHub's API does), and which
   * token or session made it (`madeWith`) when it was made with one.
   */
  async me(token: string): Promise<MeAnswer> {
    const { body, headers } = await this.request('GET', ROUTES.me, { token });
    const scopes = headers.get('x-oauth-scopes');
    return { ...normalizeMeResponse(body), ...(scopes === null ? {} : { scopes: stripControls(scopes).split(',').map((s) => s.trim()).filter(Boolean) }) };
  }
}

/** Where a redirect points, as an origin a person can check (`https://host:port`). */
function redirectOrigin(location: string | null, requested: string): string {
  if (!location) return 'nowhere (no Location)';
  try {
    const url = new URL(location, requested);
    // Only http(s) has an origin; `javascript:…` and the like are named by their scheme.
    return stripControls(url.origin === 'null' ? url.protocol : url.origin);
  } catch {
    return 'an address that is not a URL';
  }
}

function describeNetworkError(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  if ((err as Error)?.name === 'TimeoutError') return 'timed out';
  return cause?.code ?? cause?.message ?? (err as Error)?.message ?? 'network error';
}

// Built on first use, not at startup: `whoami` without --verify never needs it.
let meVariants: ReturnType<typeof buildMeVariants> | undefined;
function buildMeVariants() {
  const isoTimestamp = z.iso.datetime({ offset: true });
  const TopLevelMe = z.object({ user: UserSchema, expiresAt: isoTimestamp });
  return z.union([
    TopLevelMe,
    z.pipe(z.object({ data: TopLevelMe }), z.transform((v) => v.data)),
    z.pipe(z.extend(UserSchema, { expiresAt: isoTimestamp }), z.transform(({ id, email, name, expiresAt }) => ({ user: { id, email, name }, expiresAt }))),
  ]);
}

/** What GET /api/cli/auth/me says of a token. */
export interface MeAnswer {
  user: User;
  expiresAt: string;
  scopes?: string[];
  /** Which token or session made this one, in the server's words ("the token “CI runner”"). */
  madeWith?: string;
}

/** The most of `madeWith` that is shown: it names a token or a session, a line at most. */
const MAX_MADE_WITH_LENGTH = 200;

/**
 * Top-level `user`, a flat user, or `{data: {user}}`: all become `{user, expiresAt}`, with
 * `madeWith` when the server sent one as text. A `madeWith` of another type is left out rather
 * than failing the answer: it is only ever shown, and a server from before it sends none.
 */
export function normalizeMeResponse(body: unknown): Omit<MeAnswer, 'scopes'> {
  const parsed = (meVariants ??= buildMeVariants()).safeParse(body);
  if (!parsed.success) throw new CliError('The server answered /api/cli/auth/me with an unexpected shape.', 1, 'Is --api-url pointing at a Prospect server?');
  const { user, expiresAt } = parsed.data;
  const fields = (body as { data?: unknown }).data ?? body;
  const madeWith = (fields as { madeWith?: unknown }).madeWith;
  // Stripped here too, not only with the rest of the body: this text goes straight to the terminal.
  const shown = typeof madeWith === 'string' ? stripControls(madeWith.replace(/\s+/g, ' ')).replace(/ {2,}/g, ' ').trim().slice(0, MAX_MADE_WITH_LENGTH) : '';
  return { user: { id: user.id, email: user.email, name: user.name }, expiresAt, ...(shown ? { madeWith: shown } : {}) };
}
