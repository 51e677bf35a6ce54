import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** What an authorized poll answered, kept sealed for a retried poll. */
export interface PollReply {
  accessToken: string;
  expiresAt: string;
}

const INFO = 'prospect/device-login/poll-reply/v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The key comes from the device code itself (HKDF-SHA256, salted with the login's id),
 * which the server never stores: only its SHA-256 is in the table, and nothing about
 * this key can be learned from that. So the sealed reply opens only for whoever
 * presents the device code again: the CLI whose answer was lost.
 */
function keyFor(deviceCode: string, deviceLoginId: string): Buffer {
  return Buffer.from(hkdfSync('sha256', deviceCode, deviceLoginId, INFO, 32));
}

/** AES-256-GCM: iv ‖ ciphertext ‖ tag, bound to the login by its id as associated data. */
export function sealReply(deviceCode: string, deviceLoginId: string, reply: PollReply): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyFor(deviceCode, deviceLoginId), iv);
  cipher.setAAD(Buffer.from(deviceLoginId));
  const body = Buffer.concat([cipher.update(JSON.stringify(reply), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

/** The reply, or null when the sealed bytes do not open with this device code. */
export function openReply(deviceCode: string, deviceLoginId: string, sealed: Buffer): PollReply | null {
  if (sealed.length <= IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyFor(deviceCode, deviceLoginId), sealed.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(deviceLoginId));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    const body = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
    return JSON.parse(body.toString('utf8')) as PollReply;
  } catch {
    return null;
  }
}
