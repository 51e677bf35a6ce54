import { ORGANIZATION_HEADER, ROUTES } from '@prospect/contract';
import { CliError } from '../errors.js';
import { VERSION } from '../version.js';
import { ApiUnreachableError, redirectedError, refusedError } from './api-errors.js';
import { normalizeBaseUrl } from './base-url.js';
import { type MeAnswer, normalizeMeResponse } from './me-answer.js';
import { type FetchLike, httpTransport } from './http-transport.js';
import { describeNetworkError, MAX_ANSWER_BYTES, readCapped, tlsFailure } from './network.js';
import { traceparent } from './trace-context.js';
import { stripControls, stripControlsDeep } from './untrusted-text.js';

export type { FetchLike };

/** Learns the server's clock from its answers (session/server-clock.ts). */
export interface ServerTimeWitness {
  /** This machine's clock. */
  localNow(): number;
  /** An answer's headers (`Date`), with when its request left and its answer came, by localNow. Never throws. */
  observe(baseUrl: string, headers: Headers, sentAt: number, receivedAt: number): Promise<void>;
}

export interface ApiClientOptions {
  baseUrl: string;
  /** Default: httpTransport(process.env), through the proxies the environment names. */
  fetch?: FetchLike;
  /** Per request; the logout call uses a short one. */
  timeoutMs?: number;
  /** Told of every answer, so expiries are judged by the server's clock. */
  serverClock?: ServerTimeWitness;
  /** The slug of the organization the command acts for (org:switch, --org): sent on every request as ORGANIZATION_HEADER. */
  organization?: string;
}

/** Who is asking, on every request: the server's approval and tokens pages show it. */
export const USER_AGENT = `prospect-cli/${VERSION} (${process.platform}; node ${process.versions.node})`;

/** The Prospect API over fetch: JSON in, JSON out, one error type per way it can fail. */
export class ApiClient {
  readonly baseUrl: string;
  private readonly fetchImpl: FetchLike;
  private readonly timeoutMs: number;
  private readonly serverClock?: ServerTimeWitness;
  private readonly organization?: string;

  constructor(options: ApiClientOptions) {
    this.baseUrl = normalizeBaseUrl(options.baseUrl);
    this.fetchImpl = options.fetch ?? httpTransport(process.env);
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.serverClock = options.serverClock;
    this.organization = options.organization;
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
    // A default like the others: `prospect api -H 'Prospect-Organization: …'` replaces it.
    if (this.organization) headers[ORGANIZATION_HEADER.toLowerCase()] = this.organization;
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
      throw tlsFailure(this.baseUrl, err) ?? new ApiUnreachableError(this.baseUrl, describeNetworkError(err));
    }
    // Every answer tells the server's time, a refusal's as much as a success's.
    if (this.serverClock) await this.serverClock.observe(this.baseUrl, res.headers, sentAt!, this.serverClock.localNow());
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      throw redirectedError(method, path, this.baseUrl + path, res);
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
    if (!res.ok) throw refusedError(method, path, this.baseUrl, res, body);
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
