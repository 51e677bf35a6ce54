import { Injectable } from '@nestjs/common';
import { ERROR_CODES, SERVICE_NAME } from '@prospect/contract';
import type { OAuthClient } from './oauth-client.entity.js';
import { OAuthClientsService } from './oauth-clients.service.js';
import { oauthError } from './oauth-errors.js';

/** How a request named its client: `client_id` (and `client_secret`) in the form, or HTTP Basic. */
export interface PresentedClient {
  client_id?: string;
  client_secret?: string;
}

/** RFC 6749 §5.2: a failed Basic authentication is a 401 with a challenge for the scheme the client used. */
const BASIC_CHALLENGE = { 'WWW-Authenticate': `Basic realm="${SERVICE_NAME}"` };

/** RFC 6749 §2.3.1: Basic's user and password are each form-urlencoded first. */
function formDecoded(value: string): string | undefined {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** The client id and secret of an `Authorization: Basic` header; undefined without one (another scheme is not client authentication). */
export function basicCredentials(authorization: string | undefined): { id: string; secret: string } | undefined {
  const match = /^Basic +([A-Za-z0-9+/=._~-]+) *$/i.exec(authorization ?? '');
  if (!match) {
    if (/^Basic\b/i.test(authorization ?? '')) throw oauthError(ERROR_CODES.invalidClient, 'The Authorization header is not valid Basic authentication.', 401, BASIC_CHALLENGE);
    return undefined;
  }
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const id = colon > 0 ? formDecoded(decoded.slice(0, colon)) : undefined;
  const secret = colon > 0 ? formDecoded(decoded.slice(colon + 1)) : undefined;
  if (!id || secret === undefined) throw oauthError(ERROR_CODES.invalidClient, 'The Authorization header is not valid Basic authentication (client_id:client_secret).', 401, BASIC_CHALLENGE);
  return { id, secret };
}

/**
 * Who the client of a token (or revocation) request is, one check for every grant: a public
 * client names itself (`client_id`, no secret: PKCE or the approving person is the check); a
 * confidential one proves it with its secret, `client_secret_basic` or `client_secret_post`
 * (RFC 6749 §2.3.1), never both. A disabled client is refused as an unknown one is.
 */
@Injectable()
export class ClientAuthentication {
  constructor(private readonly clients: OAuthClientsService) {}

  /** @throws invalid_client (401 with a Basic challenge when Basic was used), or invalid_request for a missing client_id. */
  async authenticate(authorization: string | undefined, presented: PresentedClient): Promise<OAuthClient> {
    const basic = basicCredentials(authorization);
    const status = basic ? 401 : 400;
    const challenge = basic ? BASIC_CHALLENGE : {};
    const refuse = (description: string) => oauthError(ERROR_CODES.invalidClient, description, status, challenge);
    if (basic && presented.client_secret !== undefined) throw oauthError(ERROR_CODES.invalidRequest, 'Authenticate one way: client_secret_basic or client_secret_post, not both.');
    if (basic && presented.client_id !== undefined && presented.client_id !== basic.id) throw oauthError(ERROR_CODES.invalidRequest, 'client_id differs from the one in the Authorization header.');
    const clientId = basic?.id ?? presented.client_id;
    if (!clientId) throw oauthError(ERROR_CODES.invalidRequest, 'Missing field: client_id.');
    const client = await this.clients.find(clientId);
    if (!client) throw refuse(`Unknown client_id: ${clientId}.`);
    if (client.disabledAt) throw refuse(`The client ${clientId} is disabled on this server: ask its administrator.`);
    const secret = basic?.secret ?? presented.client_secret;
    if (client.type === 'public') {
      if (secret !== undefined && secret !== '') throw refuse(`${clientId} is a public client: it has no secret to send.`);
      return client;
    }
    if (!secret) throw oauthError(ERROR_CODES.invalidClient, `${clientId} is a confidential client: authenticate with client_secret_basic or client_secret_post.`, 401, BASIC_CHALLENGE);
    if (!(await this.clients.secretMatches(client, secret))) throw refuse(`Wrong client_secret for ${clientId}.`);
    return client;
  }
}
