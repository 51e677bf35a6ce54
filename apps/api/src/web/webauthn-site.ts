import type { Request } from 'express';
import type { WebAuthnSite } from '../accounts/passkeys.service.js';
import { originOf } from '../common/request-origin.js';
import type { AppConfig } from '../config/app-config.js';
import { field } from './form.js';

/**
 * Where a passkey ceremony happens: PUBLIC_URL when set, else the origin the browser used (as
 * links do), so a passkey made at `localhost` is asked for at `localhost`. Its relying-party id
 * is the host name. WebAuthn refuses an IP address as one: reach the pages by name.
 */
export function webAuthnSite(req: Request, config: AppConfig): WebAuthnSite {
  const origin = config.publicUrlSet ? new URL(config.publicUrl).origin : (originOf(req) ?? new URL(config.publicUrl).origin);
  return { origin, rpId: new URL(origin).hostname };
}

/** The browser's WebAuthn answer, sent as the JSON text of the form field `response`; undefined for anything else. */
export function webAuthnResponse<T>(req: Request): T | undefined {
  const text = field(req, 'response');
  if (!text.startsWith('{')) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && typeof (value as { id?: unknown }).id === 'string' ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}
