import { type AdminIdentityProvider, CreateIdentityProviderRequestSchema, UpdateIdentityProviderRequestSchema, utcMinute } from '@prospect/contract';
import type { Request } from 'express';
import { field } from './form.js';

/**
 * The identity-provider forms shared by the instance's page (/admin/identity-providers) and an
 * organization's (/orgs/{slug}/identity-providers): what the forms held, how they read as the JSON
 * API's requests, and the sentence a refusal shows. The organization's form has no `enforce` (its
 * domains enforce, not its provider): `withEnforce` says whether the page's form has that box.
 */

/** What the create form held, to show it again after a refusal (never the secret). */
export interface ProviderForm {
  preset: string;
  id: string;
  displayName: string;
  tenant: string;
  issuer: string;
  clientId: string;
  scopes: string;
  emailDomains: string;
  /** The instance's form only. */
  enforce?: boolean;
  allowSignUp: boolean;
  mfaAcrValues: string;
}

/** The presets of the create form: each fills in the issuer (Microsoft: of the tenant typed). */
const PRESETS: Array<[string, string]> = [
  ['generic', 'Another OpenID provider (its issuer below)'],
  ['google', 'Google (Google Workspace)'],
  ['microsoft', 'Microsoft Entra ID (its tenant below)'],
];

/** The preset choices of the create form, the one typed (or `generic`) selected. */
export function presetOptions(typed: ProviderForm | undefined): Array<{ value: string; label: string; selected: boolean }> {
  return PRESETS.map(([value, label]) => ({ value, label, selected: (typed?.preset ?? 'generic') === value }));
}

/** Words of a list typed in a field: separated by spaces, commas or new lines. */
const words = (text: string) => text.split(/[\s,]+/).filter(Boolean);

/** The create form as typed. */
export function readProviderForm(req: Request, withEnforce: boolean): ProviderForm {
  return {
    preset: field(req, 'preset') || 'generic',
    id: field(req, 'id').trim(),
    displayName: field(req, 'displayName'),
    tenant: field(req, 'tenant').trim(),
    issuer: field(req, 'issuer').trim(),
    clientId: field(req, 'clientId').trim(),
    scopes: field(req, 'scopes').trim(),
    emailDomains: field(req, 'emailDomains'),
    ...(withEnforce ? { enforce: field(req, 'enforce') === 'on' } : {}),
    allowSignUp: field(req, 'allowSignUp') === 'on',
    mfaAcrValues: field(req, 'mfaAcrValues').trim(),
  };
}

/** The create form read as the JSON API's request, checked by its schema (the secret read from the request, never kept in `typed`). */
export function createRequestOf(req: Request, typed: ProviderForm): ReturnType<typeof CreateIdentityProviderRequestSchema.safeParse> {
  return CreateIdentityProviderRequestSchema.safeParse({
    id: typed.id,
    displayName: typed.displayName,
    preset: typed.preset,
    ...(typed.preset === 'microsoft' ? { tenant: typed.tenant } : {}),
    ...(typed.preset === 'generic' || !['google', 'microsoft'].includes(typed.preset) ? { issuer: typed.issuer } : {}),
    clientId: typed.clientId,
    clientSecret: field(req, 'clientSecret'),
    ...(typed.scopes ? { scopes: words(typed.scopes) } : {}),
    emailDomains: words(typed.emailDomains),
    ...(typed.enforce !== undefined ? { enforce: typed.enforce } : {}),
    allowSignUp: typed.allowSignUp,
    mfaAcrValues: words(typed.mfaAcrValues),
  });
}

/** The edit form of one provider read as the JSON API's PATCH: its settings, and a new client secret if one is typed. */
export function updateRequestOf(req: Request, withEnforce: boolean): ReturnType<typeof UpdateIdentityProviderRequestSchema.safeParse> {
  const secret = field(req, 'clientSecret');
  return UpdateIdentityProviderRequestSchema.safeParse({
    displayName: field(req, 'displayName'),
    clientId: field(req, 'clientId').trim(),
    ...(secret ? { clientSecret: secret } : {}),
    scopes: words(field(req, 'scopes')),
    emailDomains: words(field(req, 'emailDomains')),
    ...(withEnforce ? { enforce: field(req, 'enforce') === 'on' } : {}),
    allowSignUp: field(req, 'allowSignUp') === 'on',
    mfaAcrValues: words(field(req, 'mfaAcrValues')),
  });
}

/** The first problem of a refused form, in a sentence that names its field. */
export function problemOf(error: { issues: Array<{ path: PropertyKey[]; message: string }> }): string {
  const issue = error.issues[0]!;
  const names: Record<string, string> = { id: 'The id', displayName: 'The display name', tenant: 'The tenant', issuer: 'The issuer', clientId: 'The client id', clientSecret: 'The client secret', scopes: 'The scopes', emailDomains: 'The e-mail domains' };
  const name = names[String(issue.path[0])];
  return name ? `${name} ${issue.message}.` : `${issue.message[0]!.toUpperCase()}${issue.message.slice(1)}.`;
}

/** A provider as both lists show it: its lists as the edit form's text, and when it was added. */
export function providerRow(p: AdminIdentityProvider) {
  return { ...p, scopesText: p.scopes.join(' '), domainsText: p.emailDomains.join(' '), acrText: p.mfaAcrValues.join(' '), created: utcMinute(p.createdAt) };
}
