import { type DevicePollResponse, ERROR_CODES, SERVICE_NAME } from '@prospect/contract';
import { ApiException, badRequest, notFound } from '../common/api-exception.js';
import type { PollOutcome } from '../device-login/device-login.service.js';
import type { InvalidGrantError } from '../refresh-tokens/refresh-tokens.service.js';

/**
 * How the contract's routes (`/api/cli/auth/*`, seed §4) word what the services decided: the one
 * place where their outcomes become statuses, error codes, messages and headers. The OAuth
 * endpoints word the same outcomes their own way (oauth/oauth-answers.ts).
 */

export const deviceLoginTurnedOff = (): ApiException =>
  notFound('Device login is turned off on this server. Create a token at /settings/tokens and run `prospect auth:login --token -`.');

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
