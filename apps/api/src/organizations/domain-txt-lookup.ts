import { Resolver } from 'node:dns/promises';
import { Injectable } from '@nestjs/common';
import { ERROR_CODES } from '@prospect/contract';
import { ApiException } from '../common/api-exception.js';
import { AppConfig } from '../config/app-config.js';

/** The longest one domain's TXT lookup may take, all servers and retries included. */
export const DNS_LOOKUP_TIMEOUT_MS = 5_000;

/** What DNS said about a domain's TXT records. */
export type TxtAnswer =
  | { kind: 'records'; values: string[] }
  /** The domain does not exist (NXDOMAIN). */
  | { kind: 'nxdomain' }
  /** The domain exists but has no TXT record. */
  | { kind: 'none' };

/** The name server could not be asked, or did not answer: nothing was learnt about the domain. */
const FAILURES: Record<string, string> = {
  ETIMEOUT: 'timed out',
  ECANCELLED: `gave no answer within ${DNS_LOOKUP_TIMEOUT_MS / 1000} seconds`,
  ECONNREFUSED: 'refused the connection',
  ESERVFAIL: 'failed (SERVFAIL)',
  EREFUSED: 'refused the query (REFUSED)',
  EBADRESP: 'answered something unreadable',
  ECONNRESET: 'reset the connection',
};

/**
 * A domain's TXT records, read through Node's own resolver (c-ares, not the system's getaddrinfo),
 * from DNS_SERVERS when set, else the system's servers. A resolver per lookup, so the deadline
 * cancels that lookup alone. A resolver that fails answers 503 naming what went wrong: that is no
 * verdict on the domain, and the admin may try again.
 */
@Injectable()
export class DomainTxtLookup {
  constructor(private readonly config: AppConfig) {}

  async txt(domain: string, timeoutMs = DNS_LOOKUP_TIMEOUT_MS): Promise<TxtAnswer> {
    // c-ares's own timeout per try, doubled at each retry; the deadline below bounds the whole.
    const resolver = new Resolver({ timeout: Math.min(2_000, timeoutMs), tries: 2 });
    if (this.config.dnsServers) resolver.setServers(this.config.dnsServers);
    const deadline = setTimeout(() => resolver.cancel(), timeoutMs);
    try {
      const records = await resolver.resolveTxt(domain);
      // A TXT record is one or more strings of up to 255 bytes, which mean one value together (RFC 7208 §3.3).
      return { kind: 'records', values: records.map((chunks) => chunks.join('')) };
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      if (code === 'ENOTFOUND') return { kind: 'nxdomain' };
      if (code === 'ENODATA') return { kind: 'none' };
      const what = FAILURES[code] ?? `failed (${code || 'unknown error'})`;
      throw new ApiException(503, ERROR_CODES.unavailable, `Could not look up the TXT records of ${domain}: the DNS server ${what}. Nothing was decided; try again in a moment.`, { 'Retry-After': '30' });
    } finally {
      clearTimeout(deadline);
    }
  }
}
