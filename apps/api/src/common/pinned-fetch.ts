import { lookup as systemLookup } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type * as oidc from 'openid-client';
import { addressKind, reachesThisHost } from './outbound-address.js';

/**
 * Where Prospect may connect when it talks to an identity provider (issue #43, finding 8), or to
 * an issuer a service account trusts (issue #45: its discovery and JWKS). An
 * administrator types the issuer, and Prospect connects from inside its own network: without
 * rules, registering a provider would read the server's loopback, the cloud's metadata service
 * (169.254.169.254) or any private host, and say which answered.
 *
 * - Loopback (127.0.0.0/8, ::1) stays allowed for identity providers: local development and the
 *   tests run providers there. An issuer a service account trusts (token exchange) is refused
 *   there unless TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS=true (`allowLoopback`).
 * - Private and link-local addresses (RFC 1918, CGNAT 100.64.0.0/10, 169.254.0.0/16, ULA
 *   fc00::/7, fe80::/10, and 0.0.0.0/8 and :: which reach the host itself) are refused unless
 *   FEDERATION_ALLOW_PRIVATE_ISSUERS=true (a provider inside the company's network). An
 *   IPv4-mapped IPv6 address counts as its IPv4 address.
 * - Prospect's own PUBLIC_URL is refused: it cannot be its own upstream.
 *
 * A host name is resolved once; every address it resolves to is checked, and the connection is
 * made to the checked address (a `lookup` given to the request), so a name that resolves to a
 * public address for the check and to a private one for the connection (DNS rebinding) gets
 * nowhere. Every request to a provider goes through `fetch` (discovery, token, userinfo, JWKS).
 */

/** Why a provider's address was refused before any connection was made: a sentence for the administrator. */
export class ProviderAddressRefused extends Error {}

/** Every address a host name resolves to (the system's resolver, as a connection would use it). */
export type Resolve = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

const resolveWithSystem: Resolve = (hostname) =>
  new Promise((resolve, reject) => systemLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** What the rules depend on, read at each request (the configuration may be set after start, as tests do). */
export interface ProviderNetworkRules {
  allowPrivate(): boolean;
  /** Unset: loopback is allowed (identity providers); the token exchange's issuers ask TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS. */
  allowLoopback?(): boolean;
  /** Prospect's own PUBLIC_URL. */
  ownUrl(): string;
}

/** `hostname` without the brackets of an IPv6 literal. */
const bare = (hostname: string) => (hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname);

/** The port a URL connects to. */
const portOf = (url: URL) => url.port || (url.protocol === 'https:' ? '443' : '80');

/** @throws ProviderAddressRefused when `url` is Prospect itself (the same origin, or the same port on loopback). */
export function refuseOwnUrl(url: URL, ownUrl: string): void {
  const own = new URL(ownUrl);
  const sameOrigin = url.origin === own.origin;
  const bothLoopback = [url, own].every((u) => bare(u.hostname) === 'localhost' || (isIP(bare(u.hostname)) !== 0 && addressKind(bare(u.hostname)) === 'loopback'));
  if (sameOrigin || (bothLoopback && portOf(url) === portOf(own))) {
    throw new ProviderAddressRefused(`${url.origin} is this Prospect server itself (PUBLIC_URL): it cannot be its own identity provider.`);
  }
}

/** Which addresses besides public ones a connection may reach. */
export interface AddressAllowance {
  private: boolean;
  loopback: boolean;
}

/** @throws ProviderAddressRefused when `address` is one the rules refuse. */
function refuseAddress(hostname: string, address: string, allow: AddressAllowance): void {
  const kind = addressKind(address);
  const named = hostname === address ? address : `${hostname} (${address})`;
  if (kind === 'private' && !allow.private) {
    throw new ProviderAddressRefused(
      `${named} is a private or link-local address: an identity provider must be reachable on the internet, or set FEDERATION_ALLOW_PRIVATE_ISSUERS=true for one inside your network.`,
    );
  }
  // Only the token exchange's issuers are ever refused loopback (ProviderNetworkRules.allowLoopback);
  // 0.0.0.0 and :: connect to the host too, so allowing private addresses does not let them through.
  if ((kind === 'loopback' || reachesThisHost(address)) && !allow.loopback) {
    throw new ProviderAddressRefused(`${named} is a loopback address: a trusted issuer must be reachable on the internet, or set TOKEN_EXCHANGE_ALLOW_LOOPBACK_ISSUERS=true in development.`);
  }
}

/**
 * The addresses of `hostname`, every one checked, in the resolver's order.
 * @throws ProviderAddressRefused when any of them is refused; the resolver's error when it finds none.
 */
export async function checkedAddresses(hostname: string, allow: AddressAllowance, resolve: Resolve = resolveWithSystem): Promise<Array<{ address: string; family: number }>> {
  const host = bare(hostname);
  const addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await resolve(host);
  if (!addresses.length) throw new Error(`${host} has no address`);
  // Every one: a name with one public and one private address would otherwise be a coin toss.
  for (const { address } of addresses) refuseAddress(host, address, allow);
  return addresses;
}

/** A request body openid-client sends (form-encoded, JSON or bytes). */
type Body = string | URLSearchParams | Uint8Array | ArrayBuffer | null | undefined;

/** The most of a provider's answer read (a discovery document or a JWKS is a few kilobytes). */
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * A `fetch` for openid-client (its `customFetch`) over node:http(s): the address checked before
 * connecting, and the connection pinned to it. Redirects are not followed (openid-client asks
 * for `redirect: 'manual'`), so a provider cannot send Prospect to an address that was not checked.
 */
export function providerFetch(rules: ProviderNetworkRules, resolve: Resolve = resolveWithSystem): oidc.CustomFetch {
  return async (input, options) => {
    const url = new URL(input);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ProviderAddressRefused(`${url.protocol} is not a protocol Prospect uses for an identity provider.`);
    refuseOwnUrl(url, rules.ownUrl());
    const host = bare(url.hostname);
    const [pinned] = await checkedAddresses(host, { private: rules.allowPrivate(), loopback: rules.allowLoopback?.() ?? true }, resolve);
    // The connection's lookup answers the address checked above: node connects to it, not to a second resolution.
    const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
      if ((lookupOptions as { all?: boolean }).all) (callback as unknown as (err: null, addresses: Array<{ address: string; family: number }>) => void)(null, [pinned!]);
      else callback(null, pinned!.address, pinned!.family);
    };
    const body = options.body as Body;
    const payload = body == null ? undefined : body instanceof URLSearchParams ? body.toString() : typeof body === 'string' ? body : Buffer.from(body instanceof ArrayBuffer ? new Uint8Array(body) : body);
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<Response>((resolvePromise, reject) => {
      const request = client.request(
        url,
        {
          method: options.method,
          headers: { ...options.headers, ...(payload !== undefined ? { 'content-length': String(Buffer.byteLength(payload)) } : {}) },
          lookup,
          signal: options.signal,
          // Certificates are checked against the host name, not the pinned address.
          ...(url.protocol === 'https:' && !isIP(host) ? { servername: host } : {}),
        },
        (answer) => {
          const chunks: Buffer[] = [];
          let size = 0;
          answer.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_ANSWER_BYTES) answer.destroy(new Error(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`));
            else chunks.push(chunk);
          });
          answer.on('error', reject);
          answer.on('end', () => {
            const headers = new Headers();
            for (const [name, value] of Object.entries(answer.headers)) {
              for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one);
            }
            const status = answer.statusCode ?? 502;
            // A Response of these statuses may have no body.
            const empty = status === 204 || status === 205 || status === 304 || options.method === 'HEAD';
            resolvePromise(new Response(empty ? null : Buffer.concat(chunks), { status, statusText: answer.statusMessage ?? '', headers }));
          });
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
  };
}

/** http:// is accepted for these hosts only (development and tests); everything else is https://. */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** Why `issuer` cannot be an issuer (of an identity provider, or trusted by a service account), or null. */
export function issuerProblem(issuer: string): string | null {
  if (!URL.canParse(issuer)) return 'must be a URL';
  const url = new URL(issuer);
  if (url.username || url.password || url.search || url.hash) return 'must be a plain URL (no credentials, query or fragment)';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return null;
  return 'must be an https:// URL (http:// only for localhost, in development and tests)';
}
