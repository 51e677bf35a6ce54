import { hasUnsafeText, parseScopes, type Scope, SCOPES } from '@prospect/contract';
import type { Request } from 'express';
import { field, fields } from './form.js';

export const MAX_CLIENT_NAME_LENGTH = 100;

/** What an OAuth client form held, kept when it is shown again with an error. */
export interface ClientForm {
  id: string;
  name: string;
  scopes: string[];
}

export function readClientForm(req: Request): ClientForm {
  return { id: field(req, 'id').trim(), name: field(req, 'name').trim(), scopes: fields(req, 'scopes') };
}

/**
 * The display name and scopes of a client form, checked as the register and edit pages both
 * need them: what to store, or the sentence that says what is wrong.
 */
export function checkNameAndScopes(form: ClientForm): { name: string; allowedScopes: Scope[] } | { error: string } {
  if (!form.name || form.name.length > MAX_CLIENT_NAME_LENGTH) return { error: `Please enter a display name (at most ${MAX_CLIENT_NAME_LENGTH} characters).` };
  // Shown on approval pages and in terminals: no control characters (escape sequences, newlines).
  if (hasUnsafeText(form.name)) return { error: 'A display name cannot contain control characters or bidirectional text controls.' };
  const allowedScopes = parseScopes(form.scopes.join(' '));
  if (!allowedScopes?.length) return { error: 'Please choose at least one of the scopes offered: what the client may ask people for.' };
  return { name: form.name, allowedScopes };
}

/** The scope checkboxes, ticked as `chosen` says. */
export const scopeChoices = (chosen: readonly string[]) => Object.entries(SCOPES).map(([name, words]) => ({ name, words, checked: chosen.includes(name) }));
