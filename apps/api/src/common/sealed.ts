import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * A key from a secret the server never stores (a device code, a session id: only their
 * SHA-256 is kept), so what is sealed with it opens only for whoever presents that
 * secret again; nothing about the key can be learned from the stored hash.
 * HKDF-SHA256, salted with `context` (a row's id), labelled with `purpose`.
 */
function keyFor(secret: string, context: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, context, `prospect/${purpose}/v1`, 32));
}

/** AES-256-GCM of `value` as JSON: iv ‖ ciphertext ‖ tag, bound to `context` as associated data. */
export function seal(secret: string, context: string, purpose: string, value: unknown): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secret, context, purpose), iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

/** The sealed value, or null when it does not open with this secret, context and purpose. */
export function open<T>(secret: string, context: string, purpose: string, sealed: Buffer): T | null {
  if (sealed.length <= IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyFor(secret, context, purpose), sealed.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    const body = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
    return JSON.parse(body.toString('utf8')) as T;
  } catch {
    return null;
  }
}
