import { JWT_TOKEN_TYPE, OAUTH_ROUTES, TOKEN_EXCHANGE_GRANT_TYPE } from '@prospect/contract';
import type { ApiClient } from '../api-client/api-client.js';
import { ApiHttpError } from '../api-client/api-errors.js';
import { CliError, EXIT } from '../errors.js';

/** What the exchange answers (RFC 8693 §2.2.1), as the CLI keeps it. No refresh token: run the exchange again. */
export interface ExchangedToken {
  accessToken: string;
  expiresInSeconds: number;
  scopes?: string[];
}

/**
 * The audience a CI token must carry for this service unless `--audience` says otherwise: its
 * issuer, as its OpenID configuration names it (the default a federation expects).
 */
export async function serviceIssuer(api: ApiClient, signal: AbortSignal): Promise<string> {
  const { body } = await api.request('GET', OAUTH_ROUTES.openidConfiguration, { signal });
  const issuer = (body as { issuer?: unknown } | undefined)?.issuer;
  if (typeof issuer !== 'string' || !issuer) {
    throw new CliError(`${api.baseUrl}${OAUTH_ROUTES.openidConfiguration} names no issuer, the audience a CI token is minted for.`, EXIT.failure, 'Give the audience the federation expects with --audience.');
  }
  return issuer;
}

/**
 * POST /oauth/token with the token-exchange grant: the CI's JWT for a short-lived access token of
 * the service account `clientId` (a public client here: the JWT is its proof). A refusal is one
 * line in the server's words (its `error_description`); which condition failed is the account
 * admins' to read in the organization's log, never the caller's.
 */
export async function exchangeFederatedToken(
  api: ApiClient,
  request: { clientId: string; subjectToken: string; scopes?: readonly string[] },
  signal: AbortSignal,
): Promise<ExchangedToken> {
  const form: Record<string, string> = {
    grant_type: TOKEN_EXCHANGE_GRANT_TYPE,
    subject_token_type: JWT_TOKEN_TYPE,
    subject_token: request.subjectToken,
    client_id: request.clientId,
    ...(request.scopes?.length ? { scope: request.scopes.join(' ') } : {}),
  };
  let body: unknown;
  try {
    ({ body } = await api.request('POST', OAUTH_ROUTES.token, { form, signal }));
  } catch (err) {
    if (err instanceof ApiHttpError && err.status >= 400 && err.status < 500 && err.status !== 404 && err.status !== 429) {
      if (err.code === 'unsupported_grant_type') {
        throw new CliError(`${api.baseUrl} does not offer token exchange for CI (unsupported_grant_type); nothing was saved.`, EXIT.failure, 'Use a client secret with the client credentials grant, or a newer server.');
      }
      const said = err.message.trim().replace(/\.?$/, '.');
      throw new CliError(`${api.baseUrl} refused the token exchange${err.code ? ` (${err.code})` : ''}: ${said} Nothing was saved.`, EXIT.authRequired);
    }
    throw err;
  }
  const answer = body as { access_token?: unknown; token_type?: unknown; expires_in?: unknown; scope?: unknown } | undefined;
  if (typeof answer?.access_token !== 'string' || !answer.access_token || typeof answer.expires_in !== 'number' || !(answer.expires_in > 0)) {
    throw new CliError(`${api.baseUrl}${OAUTH_ROUTES.token} answered the token exchange without an access token and its lifetime.`, EXIT.failure, 'Is --api-url pointing at a Prospect server?');
  }
  if (typeof answer.token_type === 'string' && answer.token_type.toLowerCase() !== 'bearer') {
    throw new CliError(`${api.baseUrl} issued a ${answer.token_type} token, which prospect cannot use (it sends bearer tokens).`);
  }
  return {
    accessToken: answer.access_token,
    expiresInSeconds: answer.expires_in,
    ...(typeof answer.scope === 'string' ? { scopes: answer.scope.split(' ').filter(Boolean) } : {}),
  };
}
