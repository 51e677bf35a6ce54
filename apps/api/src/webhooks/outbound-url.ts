import { lookup as systemLookup } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Injectable } from '@nestjs/common';
import { addressKind } from '../common/outbound-address.js';
import { AppConfig } from '../config/app-config.js';

/** Why a webhook or back-channel logout URL was refused, before any connection: a sentence for the admin. */
export class OutboundUrlRefused extends Error {}

/** The longest a DNS lookup of an endpoint's host may take. */
const LOOKUP_TIMEOUT_MS = 5_000;
/** A delivery is cut after this long, answer included (issue #46: a slow endpoint cannot hold a sender). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** The most of an endpoint's answer read (it is not used, only its status; the rest is discarded). */
const MAX_ANSWER_BYTES = 64 * 1024;

type Address = { address: string; family: number };

/** An endpoint's answer: its status, and where it redirected to when it did (never followed). */
export interface EndpointAnswer {
  status: number;
  location?: string;
}

/**
 * What the events of a webhook say of its URL: its scheme, host and port. The path and query stay
 * out of the log: many receivers (chat services' incoming webhooks) put their token there.
 */
export const originOf = (url: string): string => new URL(url).origin;

const bare = (hostname: string) => (hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname);

/**
 * The URL rules of webhooks and back-channel logout (issue #46): `https:` (or `http:` to a loopback
 * address with WEBHOOKS_ALLOW_INSECURE_URLS=true, for development and tests); the host resolved,
 * through DNS_SERVERS when set (as domains are verified), to no private or link-local address,
 * and to no loopback one unless insecure URLs are allowed. The ranges are
 * common/outbound-address.ts's, the ones identity providers answer to.
 *
 * `vet` runs at registration and again at every delivery; `post` connects to the very address it
 * vetted (a `lookup` that answers only that address), so a name that resolves to a public address
 * for the check and a private one for the connection (DNS rebinding) reaches nothing inside.
 * Redirects are never followed: a 3xx is a failed delivery.
 */
@Injectable()
export class OutboundUrls {
  constructor(private readonly config: AppConfig) {}

  /** @throws OutboundUrlRefused naming what is wrong with `raw`. */
  async vet(raw: string): Promise<{ url: URL; address: Address }> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundUrlRefused(`${JSON.stringify(raw.slice(0, 100))} is not a URL.`);
    }
    const insecure = this.config.webhooksAllowInsecureUrls;
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && insecure)) {
      throw new OutboundUrlRefused(`${url.origin} must be an https:// URL${url.protocol === 'http:' ? ' (http:// only on loopback with WEBHOOKS_ALLOW_INSECURE_URLS=true)' : ''}.`);
    }
    if (url.username || url.password) throw new OutboundUrlRefused('The URL must not carry a user name or password.');
    const host = bare(url.hostname);
    const addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await this.resolve(host);
    // Every address: a name with one public and one private address would otherwise be a coin toss.
    for (const { address } of addresses) {
      const kind = addressKind(address);
      const named = host === address ? address : `${host} (${address})`;
      if (kind === 'private') throw new OutboundUrlRefused(`${named} is a private or link-local address: the endpoint must be reachable on the internet.`);
      if (kind === 'loopback' && !insecure) throw new OutboundUrlRefused(`${named} is a loopback address: the endpoint must be reachable on the internet.`);
    }
    if (url.protocol === 'http:' && addresses.some(({ address }) => addressKind(address) !== 'loopback')) {
      throw new OutboundUrlRefused(`${url.origin} must be an https:// URL (http:// only on loopback).`);
    }
    return { url, address: addresses[0]! };
  }

  /**
   * POSTs `body` to `raw` after vetting it, to the vetted address, cut after DELIVERY_TIMEOUT_MS.
   * @throws OutboundUrlRefused, or the connection's error (refused, reset, timed out)
   */
  async post(raw: string, headers: Record<string, string>, body: string): Promise<EndpointAnswer> {
    const { url, address } = await this.vet(raw);
    const lookup: LookupFunction = (_hostname, options, callback) => {
      if ((options as { all?: boolean }).all) (callback as unknown as (err: null, addresses: Address[]) => void)(null, [address]);
      else callback(null, address.address, address.family);
    };
    const host = bare(url.hostname);
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<EndpointAnswer>((resolve, reject) => {
      const request = client.request(
        url,
        {
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'Prospect-Webhooks/1' },
          lookup,
          signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
          // Certificates are checked against the host name, not the pinned address.
          ...(url.protocol === 'https:' && !isIP(host) ? { servername: host } : {}),
        },
        (answer) => {
          let size = 0;
          answer.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_ANSWER_BYTES) answer.destroy();
          });
          const done = () => resolve({ status: answer.statusCode ?? 0, ...(answer.headers.location ? { location: answer.headers.location } : {}) });
          answer.on('end', done);
          answer.on('close', done);
          answer.on('error', () => done());
        },
      );
      request.on('error', (err) => reject(err.name === 'AbortError' || err.name === 'TimeoutError' ? new Error(`no answer within ${DELIVERY_TIMEOUT_MS / 1000} s`) : err));
      request.end(body);
    });
  }

  /** The host's addresses: through DNS_SERVERS when set (Node's own resolver), else the system's. */
  private async resolve(host: string): Promise<Address[]> {
    const servers = this.config.dnsServers;
    try {
      if (!servers) {
        return await new Promise<Address[]>((resolve, reject) =>
          systemLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
        );
      }
      const resolver = new Resolver({ timeout: 2_000, tries: 2 });
      resolver.setServers(servers);
      const deadline = setTimeout(() => resolver.cancel(), LOOKUP_TIMEOUT_MS);
      try {
        const settled = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
        const found = [
          ...(settled[0].status === 'fulfilled' ? settled[0].value.map((address) => ({ address, family: 4 })) : []),
          ...(settled[1].status === 'fulfilled' ? settled[1].value.map((address) => ({ address, family: 6 })) : []),
        ];
        if (!found.length) throw settled[0].status === 'rejected' ? settled[0].reason : new Error('no address');
        return found;
      } finally {
        clearTimeout(deadline);
      }
    } catch (err) {
      throw new OutboundUrlRefused(`${host} could not be resolved (${(err as { code?: string }).code ?? (err as Error).message}).`);
    }
  }
}
