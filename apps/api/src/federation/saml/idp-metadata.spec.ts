import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseIdpMetadata } from './idp-metadata.js';

/** A self-signed certificate's base64 body, made by openssl as an IdP's is. */
function certificate(cn: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'idp-metadata-'));
  try {
    const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem'), '-days', '1', '-subj', `/CN=${cn}`], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(made.stderr);
    return readFileSync(join(dir, 'c.pem'), 'utf8').replace(/-----(BEGIN|END) CERTIFICATE-----|\s+/g, '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const signing = certificate('signing');
const encryption = certificate('encryption');
const key = (use: string | null, cert: string) =>
  `<KeyDescriptor${use ? ` use="${use}"` : ''}><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>\n${cert.match(/.{1,76}/g)!.join('\n')}\n</ds:X509Certificate></ds:X509Data></ds:KeyInfo></KeyDescriptor>`;

describe('parseIdpMetadata', () => {
  it('reads an Entra-style document: the IdP among other roles, in an EntitiesDescriptor, signing keys only', () => {
    const xml = `<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">
      <EntityDescriptor entityID="https://sts.windows.net/tenant/">
        <RoleDescriptor xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="fed:SecurityTokenServiceType">${key('signing', encryption)}</RoleDescriptor>
        <IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
          ${key('signing', signing)}${key(null, signing)}${key('encryption', encryption)}
          <SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://login.example/post"/>
          <SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location=" https://login.example/saml2 "/>
        </IDPSSODescriptor>
      </EntityDescriptor></EntitiesDescriptor>`;
    const parsed = parseIdpMetadata(xml);
    expect(parsed.entityId).toBe('https://sts.windows.net/tenant/');
    expect(parsed.ssoUrl).toBe('https://login.example/saml2');
    // The signing certificate once (listed twice), as PEM; the encryption one and the other role's left out.
    expect(parsed.certificates).toEqual([expect.stringMatching(/^-----BEGIN CERTIFICATE-----\n[\s\S]+\n-----END CERTIFICATE-----$/)]);
    expect(parsed.certificates[0]!.replace(/-----(BEGIN|END) CERTIFICATE-----|\s+/g, '')).toBe(signing);
  });

  it('refuses a single sign-on URL that is not http(s)', () => {
    const xml = `<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"><IDPSSODescriptor>${key('signing', signing)}
      <SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="javascript:alert(1)"/></IDPSSODescriptor></EntityDescriptor>`;
    expect(() => parseIdpMetadata(xml)).toThrow(/not an http\(s\) URL/);
  });
});
