import { X509Certificate } from 'node:crypto';
import { DOMParser } from '@xmldom/xmldom';
import { badRequest } from '../../common/api-exception.js';

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
/** A metadata document longer than this is no IdP's (Okta's, Entra's and Google's are a few kB). */
export const MAX_METADATA_LENGTH = 100_000;

/** What Prospect takes from an IdP's metadata: who it is, where the browser is sent, and the keys its signatures must verify with. */
export interface IdpMetadata {
  entityId: string;
  /** The SingleSignOnService of the HTTP-Redirect binding. */
  ssoUrl: string;
  /** PEM certificates of its signing keys (KeyDescriptor use="signing", or without `use`). */
  certificates: string[];
}

/**
 * Reads an IdP's SAML metadata (an EntityDescriptor with an IDPSSODescriptor, or an
 * EntitiesDescriptor holding one). Nothing is fetched: the admin pastes the document, so no
 * address of theirs is connected to. The metadata's own signature is not checked (the admin
 * vouches for what they paste, as for a certificate they would paste instead).
 * @throws ApiException 400 naming what is missing or wrong.
 */
export function parseIdpMetadata(xml: string): IdpMetadata {
  if (!xml.trim()) throw badRequest('idpMetadataXml is empty: paste the metadata XML your identity provider shows for this application.');
  if (xml.length > MAX_METADATA_LENGTH) throw badRequest(`idpMetadataXml is longer than ${MAX_METADATA_LENGTH} characters: that is no identity provider's metadata.`);
  // A DOCTYPE is where entity-expansion attacks live; metadata never needs one.
  if (/<!DOCTYPE/i.test(xml)) throw badRequest('idpMetadataXml has a DOCTYPE, which SAML metadata never needs: it is refused.');
  const errors: string[] = [];
  const doc = new DOMParser({
    errorHandler: { warning: () => undefined, error: (m: string) => errors.push(m), fatalError: (m: string) => errors.push(m) },
  }).parseFromString(xml, 'text/xml');
  if (errors.length || !doc?.documentElement) throw badRequest(`idpMetadataXml is not well-formed XML (${(errors[0] ?? 'no root element').split('\n')[0]!.slice(0, 200)}).`);
  const idp = first(doc.getElementsByTagNameNS(MD, 'IDPSSODescriptor'));
  if (!idp) throw badRequest('idpMetadataXml has no IDPSSODescriptor (SAML 2.0 metadata namespace): is it the identity provider’s metadata, not a service provider’s?');
  const entity = idp.parentNode as Element | null;
  const entityId = entity?.localName === 'EntityDescriptor' ? entity.getAttribute('entityID')?.trim() : undefined;
  if (!entityId) throw badRequest('idpMetadataXml has no entityID on the EntityDescriptor of its IDPSSODescriptor.');
  if (entityId.length > 1000) throw badRequest('The entityID of idpMetadataXml is longer than 1000 characters.');
  const sso = Array.from(idp.getElementsByTagNameNS(MD, 'SingleSignOnService')).find((e) => e.getAttribute('Binding') === REDIRECT_BINDING);
  const ssoUrl = sso?.getAttribute('Location')?.trim();
  if (!ssoUrl) throw badRequest('idpMetadataXml has no SingleSignOnService with the HTTP-Redirect binding (urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect), which Prospect sends the browser to.');
  if (!URL.canParse(ssoUrl) || !['https:', 'http:'].includes(new URL(ssoUrl).protocol) || ssoUrl.length > 2000) throw badRequest(`The HTTP-Redirect SingleSignOnService of idpMetadataXml is not an http(s) URL: ${ssoUrl.slice(0, 200)}`);
  const certificates: string[] = [];
  for (const key of Array.from(idp.getElementsByTagNameNS(MD, 'KeyDescriptor'))) {
    const use = key.getAttribute('use');
    if (use && use !== 'signing') continue;
    for (const cert of Array.from(key.getElementsByTagNameNS(DS, 'X509Certificate'))) {
      const pem = toPem(cert.textContent ?? '');
      if (!certificates.includes(pem)) certificates.push(pem);
    }
  }
  if (!certificates.length) throw badRequest('idpMetadataXml has no signing certificate: a KeyDescriptor (use="signing") with a ds:X509Certificate in its IDPSSODescriptor.');
  return { entityId, ssoUrl, certificates };
}

/** A base64 certificate of the metadata as PEM, checked to be one. @throws ApiException 400 */
function toPem(base64: string): string {
  const body = base64.replace(/\s+/g, '');
  try {
    new X509Certificate(Buffer.from(body, 'base64'));
  } catch {
    throw badRequest('A signing certificate of idpMetadataXml (ds:X509Certificate) is not a valid X.509 certificate.');
  }
  return `-----BEGIN CERTIFICATE-----\n${body.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----`;
}

function first<T>(list: ArrayLike<T>): T | undefined {
  return list.length ? list[0] : undefined;
}
