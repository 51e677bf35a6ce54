import { ERROR_CODES, type ErrorCode, parseScopes, PKCE_S256_CHALLENGE_PATTERN, type Scope, SCOPES, withoutLoopbackPort } from '@prospect/contract';
import type { CheckedAuthorization, Prompt } from './authorization-request.js';
import type { OAuthClient } from './oauth-client.entity.js';
import type { OAuthClientsService } from './oauth-clients.service.js';

/*
 * The named checks of an authorization request, node-oidc-provider's way: functions of the request
 * alone, so the authorization request and the consent page's answer (and any door after them) run
 * the same ones, in the order AuthorizationService.check gives them.
 */

const PROMPTS: readonly Prompt[] = ['none', 'login', 'consent', 'select_account'];

/** Why a request is answered with an error at its redirect URI. */
export interface Refusal {
  error: ErrorCode;
  description: string;
}
const refusal = (error: ErrorCode, description: string): Refusal => ({ error, description });
export const isRefusal = (value: unknown): value is Refusal => typeof value === 'object' && value !== null && 'error' in value;

/** A query or form parameter: absent, one string, or sent more than once (RFC 6749 §3.1 forbids that). */
export function single(params: Record<string, unknown>, name: string): string | undefined | null {
  const value = params[name];
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : null;
}

/** RFC 6749 §4.1.2.1: an unknown, disabled or code-flow-less client is told to the person, not redirected to. */
export async function checkClient(params: Record<string, unknown>, clients: Pick<OAuthClientsService, 'find'>): Promise<OAuthClient | Extract<CheckedAuthorization, { kind: 'refused' }>> {
  const clientId = single(params, 'client_id');
  const refuse = (message: string) => ({ kind: 'refused' as const, status: 400, title: 'This sign-in link is not valid', message });
  if (!clientId) return refuse('The application that sent you here did not say who it is (client_id). Go back to it and try again, or tell its developers.');
  const client = await clients.find(clientId);
  if (!client) return refuse(`No application “${clientId}” is registered on Prospect, so it cannot sign you in. Tell its developers, or a Prospect administrator.`);
  if (client.disabledAt) return refuse(`${client.name} is disabled on this server: it cannot sign anyone in. Ask a Prospect administrator.`);
  if (!client.redirectUris.length) return refuse(`${client.name} is not set up to sign in through the browser (it has no redirect URI). Ask a Prospect administrator.`);
  return client;
}

/**
 * The redirect URI must be one registered for the client, exactly; a loopback one (RFC 8252
 * §7.3) on any port. One that is not is never redirected to: it may be an attacker's.
 */
export function checkRedirectUri(params: Record<string, unknown>, client: OAuthClient): string | Extract<CheckedAuthorization, { kind: 'refused' }> {
  const given = single(params, 'redirect_uri');
  const refuse = (message: string) => ({ kind: 'refused' as const, status: 400, title: 'This sign-in link is not valid', message });
  if (!given) return refuse(`${client.name} did not say where to send you back (redirect_uri). Go back to it and try again, or tell its developers.`);
  const matches = client.redirectUris.some((registered) => registered === given || withoutLoopbackPort(registered) === withoutLoopbackPort(given));
  if (!matches) return refuse(`${client.name} asked to send you back to an address that is not registered for it, so Prospect will not send you there. Tell its developers.`);
  // A registered URI parses (it was checked at registration), but a loopback one's port is the
  // request's own: 99999 matches the registered URI and no URL can hold it, so it is refused here,
  // before a code is written for an answer that could never be sent.
  if (!URL.canParse(given) || new URL(given).port === '0') {
    return refuse(`${client.name} asked to send you back to a port that does not exist (a port is 1 to 65535), so Prospect will not send you there. Tell its developers.`);
  }
  return given;
}

/** Each parameter once (RFC 6749 §3.1), request objects not supported, the lengths this server keeps. */
export function checkParameters(params: Record<string, unknown>): Refusal | undefined {
  const repeated = Object.keys(params).filter((name) => single(params, name) === null);
  if (repeated.length) return refusal(ERROR_CODES.invalidRequest, `Each parameter may be sent once: ${repeated.join(', ')} came more than once.`);
  if (single(params, 'request') !== undefined) return refusal(ERROR_CODES.requestNotSupported, 'Request objects (request) are not supported: send the parameters in the query.');
  if (single(params, 'request_uri') !== undefined) return refusal(ERROR_CODES.requestUriNotSupported, 'request_uri is not supported: send the parameters in the query.');
  const responseMode = single(params, 'response_mode');
  if (responseMode !== undefined && responseMode !== 'query') return refusal(ERROR_CODES.invalidRequest, 'Only response_mode=query is supported.');
  const maxAge = single(params, 'max_age');
  if (maxAge !== undefined && !/^\d{1,9}$/.test(maxAge!)) return refusal(ERROR_CODES.invalidRequest, 'max_age must be a whole number of seconds.');
  for (const [name, max] of [['state', 400], ['nonce', 200], ['login_hint', 320]] as const) {
    const value = single(params, name);
    if (value !== undefined && (value!.length > max || /[\u0000-\u001f\u007f]/.test(value!))) return refusal(ERROR_CODES.invalidRequest, `${name} must be at most ${max} printable characters.`);
  }
  return undefined;
}

/** OAuth 2.1: `code` only (no implicit or hybrid flow: `token` and `id_token` responses are refused). */
export function checkResponseType(params: Record<string, unknown>): Refusal | undefined {
  const responseType = single(params, 'response_type');
  if (!responseType) return refusal(ERROR_CODES.invalidRequest, 'Missing parameter: response_type (use code).');
  if (responseType !== 'code') return refusal(ERROR_CODES.unsupportedResponseType, `Unsupported response_type: ${responseType}. Only the authorization code flow (response_type=code) is supported.`);
  return undefined;
}

/** PKCE for every client, `S256` only: a missing challenge or `plain` is refused (RFC 9700 §2.1.1). */
export function checkPkce(params: Record<string, unknown>): Refusal | undefined {
  const challenge = single(params, 'code_challenge');
  const method = single(params, 'code_challenge_method');
  if (!challenge) return refusal(ERROR_CODES.invalidRequest, 'PKCE is required: send code_challenge, with code_challenge_method=S256.');
  if (method !== 'S256') return refusal(ERROR_CODES.invalidRequest, `code_challenge_method must be S256${method ? ` (not ${method})` : ' (a missing one means plain, which is not supported)'}.`);
  if (!PKCE_S256_CHALLENGE_PATTERN.test(challenge)) return refusal(ERROR_CODES.invalidRequest, 'code_challenge must be the base64url SHA-256 of the code verifier: 43 characters.');
  return undefined;
}

/**
 * What the client may be granted: the scopes asked for, each one defined (SCOPES) and allowed to
 * it, never `admin` (issue #31: administration is asked for in a device login and approved in sudo
 * mode); asking for nothing, all it is allowed but `admin`.
 */
export function checkScope(params: Record<string, unknown>, client: OAuthClient): Scope[] | Refusal {
  const requested = single(params, 'scope')?.trim();
  const allowed = client.allowedScopes.split(' ').filter(Boolean);
  const asked = requested ? requested.split(/ +/) : allowed.filter((scope) => scope !== 'admin');
  const unknown = asked.filter((scope) => !Object.hasOwn(SCOPES, scope));
  if (unknown.length) return refusal(ERROR_CODES.invalidScope, `Unknown scope: ${unknown.join(' ')} (scopes_supported lists them).`);
  if (asked.includes('admin')) return refusal(ERROR_CODES.invalidScope, 'admin is never granted through the browser: administration is asked for in a device login and approved in sudo mode.');
  const refused = asked.filter((scope) => !allowed.includes(scope));
  if (refused.length) return refusal(ERROR_CODES.invalidScope, `Not allowed to ${client.id}: ${refused.join(' ')}.`);
  const scopes = parseScopes(asked.join(' ')) ?? [];
  if (!scopes.length) return refusal(ERROR_CODES.invalidScope, 'No scope to grant.');
  return scopes;
}

/** OpenID Connect Core §3.1.2.1: `none` alone, or any of `login`, `consent`, `select_account`. */
export function checkPrompt(params: Record<string, unknown>): Prompt[] | Refusal {
  const values = (single(params, 'prompt') ?? '').split(' ').filter(Boolean);
  const unknown = values.filter((value) => !PROMPTS.includes(value as Prompt));
  if (unknown.length) return refusal(ERROR_CODES.invalidRequest, `Unsupported prompt: ${unknown.join(' ')}.`);
  if (values.includes('none') && values.length > 1) return refusal(ERROR_CODES.invalidRequest, 'prompt=none cannot be combined with other prompts.');
  return [...new Set(values)] as Prompt[];
}
