import { OAUTH_ROUTES, ROUTES } from '@prospect/contract';
import { CliError, EXIT } from '../errors.js';

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
