import { CliError } from '../errors.js';

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
  return cause?.code ?? cause?.message ?? (err as Error)?.message ?? 'network error';
}
