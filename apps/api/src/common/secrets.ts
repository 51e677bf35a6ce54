import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { USER_CODE_ALPHABET, USER_CODE_LENGTH } from '@prospect/contract';

/** 32 random bytes (256 bits), base64url, behind a recognizable prefix. */
export function generateSecret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** Length of `generateSecret(prefix)`: 43 base64url characters after the prefix. */
export const secretLength = (prefix: string) => prefix.length + 43;

/** What we store and look up by: secrets themselves never reach the database. */
export function sha256(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** Cheap shape check that spares the database lookups for obvious garbage. */
export function looksLikeSecret(value: string, prefix: string): boolean {
  return value.length === secretLength(prefix) && value.startsWith(prefix) && /^[A-Za-z0-9_-]+$/.test(value);
}

/** A user code: 8 consonants, uniformly drawn (randomInt avoids modulo bias). */
export function generateUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

export function constantTimeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
