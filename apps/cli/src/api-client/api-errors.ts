import { ErrorBodySchema } from '@prospect/contract';
import { CliError } from '../errors.js';
import { stripControls } from './untrusted-text.js';

/** Why the server refused a bearer token (RFC 6750's error_description, as the API words it). */
export type TokenProblem = 'expired' | 'revoked' | 'disabled' | 'unknown';

/** An HTTP answer that is not 2xx, with the server's error body when it sent one. */
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

/** The server could not be reached at all (refused, DNS, reset, timeout). */
export class ApiUnreachableError extends CliError {
  constructor(readonly baseUrl: string, cause: string) {
    super(`Cannot reach ${baseUrl} (${cause}).`, 1, 'Check the address (--api-url or PROSPECT_API_BASE_URL) and that the server is running.');
  }
}

/** A 3xx answer to `method path`, which is never followed: it names where it pointed and says nothing went there. */
export function redirectedError(method: string, path: string, requestedUrl: string, res: Response): ApiHttpError {
  return new ApiHttpError(
    res.status,
    undefined,
    `${method} ${path} was redirected (HTTP ${res.status}) to ${redirectOrigin(res.headers.get('location'), requestedUrl)}; prospect follows no redirect, so nothing was sent there.`,
    res.headers,
    res.statusText,
  );
}

/** A non-2xx answer to `method path`, in the server's words when its body is our error shape. */
export function refusedError(method: string, path: string, baseUrl: string, res: Response, body: unknown): ApiHttpError {
  const error = ErrorBodySchema.safeParse(body);
  const message = error.success
    ? error.data.message
    : res.status === 503
      ? `${new URL(baseUrl).host} is briefly unavailable (HTTP 503); try again in a few seconds.`
      : `${method} ${path} failed with HTTP ${res.status}.`;
  return new ApiHttpError(res.status, error.success ? error.data.error : undefined, message, res.headers, res.statusText);
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
