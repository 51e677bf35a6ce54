import { createHash, randomBytes } from 'node:crypto';
import { OAUTH_ROUTES } from '@prospect/contract';
import { request, type Target } from '../support/http.js';
import type { WebClient } from '../support/web-client.js';

/** A PKCE pair (RFC 7636, S256). */
export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** An authorization request's parameters: a code with PKCE S256 for `clientId`, back to `redirectUri`. */
export function authorizationParams(clientId: string, redirectUri: string, challenge: string, extra: Record<string, string> = {}) {
  return { response_type: 'code', client_id: clientId, redirect_uri: redirectUri, scope: 'openid profile email', code_challenge: challenge, code_challenge_method: 'S256', state: 'xyz', ...extra };
}

/**
 * GET /oauth/authorize in a signed-in cookie-keeping client, as a browser that typed the address
 * (Sec-Fetch-Site: none), approving on the consent page if it is shown; where the browser is sent.
 */
export async function approveIn(web: WebClient, params: Record<string, string>): Promise<URL> {
  const page = await web.send('GET', `${OAUTH_ROUTES.authorize}?${new URLSearchParams(params)}`, undefined, { 'sec-fetch-site': 'none' });
  if (page.status === 303) return new URL(page.location!);
  if (page.status !== 200) throw new Error(`the authorization endpoint answered ${page.status}: ${page.text.slice(0, 500)}`);
  const answer = await web.send('POST', `${OAUTH_ROUTES.authorize}/consent`, { ...params, _csrf: web.csrfFrom(page.text), decision: 'approve' });
  if (answer.status !== 303) throw new Error(`the consent answered ${answer.status}`);
  return new URL(answer.location!);
}

/** POST /oauth/token with a form body. */
export const tokenRequest = (target: Target, params: Record<string, string>, headers: Record<string, string> = {}) =>
  request(target, 'POST', OAUTH_ROUTES.token, { body: new URLSearchParams(params).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
