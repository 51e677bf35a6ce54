import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_MAX_LENGTH } from '@prospect/contract';
import type { Request } from 'express';
import type { AuthPrincipal } from '../auth/auth-principal.js';
import { badRequest } from '../common/api-exception.js';

/** RFC 8941 §3.3.3 sf-string: printable ASCII in double quotes, `"` and `\` escaped with `\`. */
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;
/**
 * What most clients send (Stripe's style), taken too: visible ASCII without quotes, backslashes or
 * commas, so a header sent twice (joined with ", ") is never mistaken for one key.
 */
const BARE = /^[\x21\x23-\x2b\x2d-\x5b\x5d-\x7e]+$/;

/**
 * The request's Idempotency-Key (draft-ietf-httpapi-idempotency-key-header §2.1), undefined when it
 * has none. A key must be one string of 1 to IDEMPOTENCY_KEY_MAX_LENGTH printable ASCII characters;
 * anything else (empty, too long, a control character, sent twice) is a 400, never quietly ignored:
 * a client that sent one counts on it.
 */
export function parseIdempotencyKey(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const quoted = SF_STRING.exec(raw.trim());
  const key = quoted ? quoted[1]!.replace(/\\(["\\])/g, '$1') : BARE.test(raw.trim()) ? raw.trim() : undefined;
  if (!key?.trim() || key.length > IDEMPOTENCY_KEY_MAX_LENGTH) {
    throw badRequest(
      `${IDEMPOTENCY_KEY_HEADER} must be sent once, as one string of 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} printable ASCII characters, e.g. "8e03978e-40d5-43e8-bc93-6894a57f9324".`,
    );
  }
  return key;
}

/**
 * The secret the caller proved itself with on this request: its bearer token, or its signed-in
 * browser's session id. Neither is stored (only their SHA-256), so an answer kept under it opens
 * only for whoever presents it again.
 */
export function presentedCredential(req: Request, principal: AuthPrincipal): string {
  if (principal.via === 'web-session') return `session ${req.sessionID}`;
  // The guard took the token from this header alone (`Bearer <token>`).
  return `bearer ${req.headers.authorization!.replace(/^\s*bearer\s+/i, '').trim()}`;
}
