import { USER_CODE_ALPHABET, USER_CODE_LENGTH } from './constants.js';

/**
 * Canonical form of a user code as a person may type it: any letter case,
 * with or without the hyphen and spaces. Returns null when it cannot be a code.
 */
export function normalizeUserCode(input: string): string | null {
  const compact = input.replace(/[\s-]/g, '').toUpperCase();
  if (compact.length !== USER_CODE_LENGTH) return null;
  for (const ch of compact) if (!USER_CODE_ALPHABET.includes(ch)) return null;
  return compact;
}

/** `BCDFGHJK` → `BCDF-GHJK`, the form shown to people. */
export function formatUserCode(compact: string): string {
  const half = USER_CODE_LENGTH / 2;
  return `${compact.slice(0, half)}-${compact.slice(half)}`;
}
