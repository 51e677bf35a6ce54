import { CLIENT_TYPES, type ClientType, hasUnsafeText, MAX_CLIENT_URIS, originProblem, parseScopes, redirectUriProblem, type Scope, SCOPES } from '@prospect/contract';
import type { Request } from 'express';
import { field, fields } from '../form.js';

export const MAX_CLIENT_NAME_LENGTH = 100;

/** What an OAuth client form held, kept when it is shown again with an error. */
export interface ClientForm {
  id: string;
  name: string;
  scopes: string[];
  /** `public` or `confidential` (registration only). */
  type: string;
  /** One per line, as typed. */
  redirectUris: string;
  allowedOrigins: string;
  /** Where logout tokens go (issue #46); empty: none. */
  backchannelLogoutUri: string;
}

export function readClientForm(req: Request): ClientForm {
  return {
    id: field(req, 'id').trim(),
    name: field(req, 'name').trim(),
    scopes: fields(req, 'scopes'),
    type: field(req, 'type') || 'public',
    redirectUris: field(req, 'redirect_uris'),
    allowedOrigins: field(req, 'allowed_origins'),
    backchannelLogoutUri: field(req, 'backchannel_logout_uri').trim(),
  };
}

const lines = (text: string) => text.split(/\r?\n/).map((line) => line.trim()).filter(Boolean);

/**
 * The redirect URIs and allowed origins of a client form (one per line), checked as the admin API
 * checks them (the contract's rules): what to store, or the sentence that says what is wrong.
 */
export function checkUrisAndOrigins(
  form: ClientForm,
  allowedScopes: readonly string[],
): { redirectUris: string[]; allowedOrigins: string[]; backchannelLogoutUri: string | null } | { error: string } {
  const redirectUris = lines(form.redirectUris);
  const allowedOrigins = lines(form.allowedOrigins);
  if (redirectUris.length > MAX_CLIENT_URIS || allowedOrigins.length > MAX_CLIENT_URIS) return { error: `A client has at most ${MAX_CLIENT_URIS} redirect URIs and ${MAX_CLIENT_URIS} allowed origins.` };
  for (const uri of redirectUris) {
    const problem = redirectUriProblem(uri);
    if (problem) return { error: `The redirect URI ${uri} ${problem}.` };
  }
  for (const origin of allowedOrigins) {
    const problem = originProblem(origin);
    if (problem) return { error: `The allowed origin ${origin} ${problem}.` };
  }
  if (redirectUris.length && allowedScopes.includes('admin')) {
    return { error: 'A client with redirect URIs cannot be allowed “admin”: the authorization code flow never grants administration (a device login asks for it, approved in sudo mode).' };
  }
  // Its address rules (https, no private address) are the service's, which resolves the host.
  return { redirectUris, allowedOrigins, backchannelLogoutUri: form.backchannelLogoutUri || null };
}

/** The type a registration form chose. */
export function checkType(form: ClientForm): ClientType | { error: string } {
  return (CLIENT_TYPES as readonly string[]).includes(form.type) ? (form.type as ClientType) : { error: 'Please choose public or confidential.' };
}

/**
 * The display name and scopes of a client form, checked as the register and edit pages both
 * need them: what to store, or the sentence that says what is wrong.
 */
export function checkNameAndScopes(form: ClientForm): { name: string; allowedScopes: Scope[] } | { error: string } {
  if (!form.name || form.name.length > MAX_CLIENT_NAME_LENGTH) return { error: `Please enter a display name (at most ${MAX_CLIENT_NAME_LENGTH} characters).` };
  // Shown on approval pages and in terminals: no control characters (escape sequences, newlines).
  if (hasUnsafeText(form.name)) return { error: 'A display name cannot contain control characters, invisible characters or bidirectional text controls.' };
  const allowedScopes = parseScopes(form.scopes.join(' '));
  if (!allowedScopes?.length) return { error: 'Please choose at least one of the scopes offered: what the client may ask people for.' };
  return { name: form.name, allowedScopes };
}

/** The scope checkboxes, ticked as `chosen` says. */
export const scopeChoices = (chosen: readonly string[]) => Object.entries(SCOPES).map(([name, words]) => ({ name, words, checked: chosen.includes(name) }));
