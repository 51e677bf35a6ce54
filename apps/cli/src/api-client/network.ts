import { CliError } from '../errors.js';
import { stripControls } from './untrusted-text.js';

/** Every answer of the API is a small JSON document; a bigger one is refused, not buffered. */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** The body as text, refusing (and cancelling) past `limit` bytes, whatever Content-Length claims. */
export async function readCapped(res: Response, limit: number): Promise<string> {
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

/** Why a request got no answer, in a few words (`timed out`, `ECONNREFUSED`, `ENOTFOUND`…). */
export function describeNetworkError(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  if ((err as Error)?.name === 'TimeoutError') return 'timed out';
  // undici's words when the proxy of HTTP(S)_PROXY answers CONNECT with anything but 200 (a cause of the cause).
  const proxyStatus = causes(err).map((e) => /^Proxy response \((\d{3})\)/.exec(e.message ?? '')?.[1]).find(Boolean);
  if (proxyStatus) return `the proxy refused to carry the request: HTTP ${proxyStatus}${proxyStatus === '407' ? ', it wants credentials (http://user:password@host:port in HTTPS_PROXY)' : ''}`;
  return cause?.code ?? cause?.message ?? (err as Error)?.message ?? 'network error';
}

/** An error's causes, nearest first (undici wraps the network's error once or twice). */
function causes(err: unknown): Array<{ code?: unknown; message?: string }> {
  const chain = [];
  for (let at = (err as { cause?: unknown })?.cause; at && typeof at === 'object' && chain.length < 5; at = (at as { cause?: unknown }).cause) chain.push(at as { code?: unknown; message?: string });
  return chain;
}

/** node:tls's verification codes for a chain this machine does not trust: self-signed, or signed by a CA it does not know. */
const UNTRUSTED_CHAIN = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
]);

/**
 * A request that failed on the server's certificate, said in one line: what is wrong with it, and
 * what fixes it. There is no --insecure: a CA of the organization's own is trusted by naming it in
 * NODE_EXTRA_CA_CERTS (Node reads it at start, for every TLS connection, proxied ones included).
 * Undefined when the failure is not about a certificate.
 */
export function tlsFailure(baseUrl: string, err: unknown): CliError | undefined {
  const cause = (err as { cause?: { code?: string; cert?: { subjectaltname?: string } } })?.cause;
  const code = cause?.code;
  if (!code) return undefined;
  const server = new URL(baseUrl).host;
  if (UNTRUSTED_CHAIN.has(code)) {
    const why = code === 'DEPTH_ZERO_SELF_SIGNED_CERT' || code === 'SELF_SIGNED_CERT_IN_CHAIN' ? 'a self-signed chain' : 'an authority this machine does not know';
    return new CliError(`Cannot trust ${server}: its certificate is signed by ${why} (${code}); if that is your organization's CA, set NODE_EXTRA_CA_CERTS to its PEM file.`);
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    const when = code === 'CERT_HAS_EXPIRED' ? 'has expired' : 'is not valid yet';
    return new CliError(`Cannot trust ${server}: its certificate ${when} (${code}); its administrator must renew it, or this machine's clock is wrong (NODE_EXTRA_CA_CERTS cannot fix this).`);
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    const names = cause?.cert?.subjectaltname ? ` (it names ${stripControls(cause.cert.subjectaltname).replace(/DNS:|IP Address:/g, '')})` : '';
    return new CliError(`Cannot trust ${server}: its certificate is for another host name${names}; use a name it was issued for in --api-url (NODE_EXTRA_CA_CERTS cannot fix this).`);
  }
  return undefined;
}
