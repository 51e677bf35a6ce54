import { ADMIN_LOGIN_COMMAND, type DevicePollResponse, ERROR_CODES, IDEMPOTENCY_KEY_HEADER, SERVICE_NAME } from '@prospect/contract';
import { ApiException, badRequest, notFound } from '../common/api-exception.js';
import type { PollOutcome } from '../device-login/device-login.service.js';
import type { InvalidGrantError } from '../refresh-tokens/refresh-tokens.service.js';

/**
 * How the contract's routes (`/api/cli/auth/*`, seed §4) word what the services decided: the one
 * place where their outcomes become statuses, error codes, messages and headers. The OAuth
 * endpoints word the same outcomes their own way (oauth/oauth.service.ts, with oauth/oauth-errors.ts).
 */

export const deviceLoginTurnedOff = (): ApiException =>
  notFound('Device login is turned off on this server. Log in through the browser with `prospect auth:login --web`, or create a token at /settings/tokens and run `prospect auth:login --token -`.');

/** A poll (seed §4.2): every end of the login reads `denied`; an unknown code and a poll too early are errors. */
export function pollAnswer(outcome: PollOutcome, intervalSeconds: number): DevicePollResponse {
  switch (outcome.kind) {
    case 'unknown':
      throw badRequest('Unknown device code.');
    case 'slow_down':
      throw new ApiException(429, ERROR_CODES.slowDown, `Polling too fast: wait ${intervalSeconds} seconds between polls.`, {
        'Retry-After': String(intervalSeconds),
      });
    case 'pending':
      return { status: 'pending' };
    case 'authorized':
      return outcome.reply;
    default:
      return { status: 'denied' };
  }
}

/** A refused refresh token. A 401 carries a challenge (RFC 9110 §15.5.2); the code says the grant, not a bearer token, failed. */
export const refreshRefused = (err: InvalidGrantError): ApiException =>
  new ApiException(401, ERROR_CODES.invalidGrant, err.message, { 'WWW-Authenticate': `Bearer realm="${SERVICE_NAME}"` });

/**
 * The token a new one was being made with was revoked (or expired) a moment ago, after this
 * request's verification: refused as that token itself now is (RFC 6750 §3.1).
 */
export const minterEnded = (): ApiException =>
  new ApiException(401, ERROR_CODES.invalidToken, 'Your token has been revoked or has expired: sign in again to get a new one.', {
    'WWW-Authenticate': `Bearer realm="${SERVICE_NAME}", error="invalid_token", error_description="token revoked or expired"`,
  });

/**
 * An administrator's token without a fresh `admin` (not asked for, or its grant's hours are
 * over) asked for a token for someone else: `insufficient_scope`, as the administration API says it.
 */
export const adminScopeNeeded = (): ApiException =>
  new ApiException(
    403,
    ERROR_CODES.insufficientScope,
    `This token does not carry the “admin” scope, which issuing a token for someone else needs: sign in again with \`${ADMIN_LOGIN_COMMAND}\`.`,
    { 'WWW-Authenticate': `Bearer realm="${SERVICE_NAME}", error="insufficient_scope", scope="admin", error_description="sign in again with ${ADMIN_LOGIN_COMMAND}"` },
  );

/**
 * Another request with the same Idempotency-Key is being carried out (draft-ietf-httpapi-
 * idempotency-key-header §2.7): sent again in a moment, it gets that request's token.
 */
export const idempotencyKeyInProgress = (): ApiException =>
  new ApiException(409, ERROR_CODES.conflict, `A request with this ${IDEMPOTENCY_KEY_HEADER} is in progress: send it again in a moment to get its answer.`, {
    'Retry-After': '1',
  });

/** The Idempotency-Key was used before with another body (the draft's 422): a new request needs a new key. */
export const idempotencyKeyReused = (): ApiException =>
  new ApiException(
    422,
    ERROR_CODES.invalidRequest,
    `This ${IDEMPOTENCY_KEY_HEADER} was already used with a different request: send a new key with a new request.`,
  );
