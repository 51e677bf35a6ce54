import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { SignedXml } from 'xml-crypto';

/** A signing key and its self-signed certificate (PEM), made by openssl as an IdP's would be. */
export interface SigningKey {
  key: string;
  cert: string;
}

export function newSigningKey(cn = 'test-idp'): SigningKey {
  const dir = mkdtempSync(join(tmpdir(), 'saml-idp-'));
  try {
    const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2', '-subj', `/CN=${cn}`], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`openssl: ${made.stderr}`);
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const certBody = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s+/g, '');
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const iso = (ms: number) => new Date(ms).toISOString();
const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** What one SAML Response says, and how it is signed (the defaults: a good answer, the assertion signed). */
export interface ResponseOptions {
  acsUrl: string;
  audience: string;
  inResponseTo?: string;
  nameId: string;
  nameIdFormat?: string;
  attributes?: Record<string, string>;
  authnContextClassRef?: string;
  /** Offsets from now, ms. */
  authnInstant?: number;
  notBefore?: number;
  notOnOrAfter?: number;
  issuer?: string;
  assertionId?: string;
  destination?: string | null;
  recipient?: string;
  sign?: 'assertion' | 'response' | 'none';
  /** Sign with this key instead of the IdP's own. */
  key?: SigningKey;
}

/**
 * A SAML 2.0 IdP for the tests, on node:http, signing with xml-crypto (the `saml-idp` package
 * cannot be installed): its metadata, and `/sso`, the HTTP-Redirect endpoint, which reads the
 * AuthnRequest and answers the browser with a form that posts the Response to the ACS at once
 * (as Okta's and Entra's pages do), for the person `next` names.
 */
export class SamlIdp {
  readonly signing = newSigningKey();
  /** Who signs in at `/sso`, and anything else its Response says. */
  next: Partial<ResponseOptions> & { nameId: string } = { nameId: 'nobody@example.test' };
  /** The AuthnRequests `/sso` received. */
  readonly requests: Array<{ id: string; acsUrl: string | null; issuer: string | null; forceAuthn: boolean }> = [];

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<SamlIdp> {
    let idp: SamlIdp | undefined;
    const server = createServer((req, res) => idp!.handle(req.url ?? '/', res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address() as { port: number };
    idp = new SamlIdp(server, `http://127.0.0.1:${address.port}`);
    return idp;
  }

  get entityId(): string {
    return `${this.url}/metadata`;
  }

  /** The IdP's metadata, as an admin downloads it from their IdP. */
  metadataXml(certs: string[] = [this.signing.cert]): string {
    const keys = certs
      .map((cert) => `<md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certBody(cert)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`)
      .join('');
    return `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${this.entityId}">
  <md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    ${keys}
    <md:NameIDFormat>${EMAIL_FORMAT}</md:NameIDFormat>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${this.url}/sso-post"/>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${this.url}/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;
  }

  /** Reads the AuthnRequest of an HTTP-Redirect URL (the SP's `Location`). */
  static authnRequestOf(location: string): { id: string; acsUrl: string | null; issuer: string | null; destination: string | null; forceAuthn: boolean } {
    const xml = inflateRawSync(Buffer.from(new URL(location).searchParams.get('SAMLRequest') ?? '', 'base64')).toString('utf8');
    return {
      id: /\bID="([^"]+)"/.exec(xml)?.[1] ?? '',
      acsUrl: /AssertionConsumerServiceURL="([^"]+)"/.exec(xml)?.[1] ?? null,
      issuer: /<saml:Issuer[^>]*>([^<]+)</.exec(xml)?.[1] ?? null,
      destination: /\bDestination="([^"]+)"/.exec(xml)?.[1] ?? null,
      forceAuthn: /\bForceAuthn="true"/.test(xml),
    };
  }

  /** A SAML Response, base64 as the form posts it. */
  response(options: ResponseOptions): string {
    return Buffer.from(this.responseXml(options)).toString('base64');
  }

  responseXml(o: ResponseOptions): string {
    const now = Date.now();
    const issuer = o.issuer ?? this.entityId;
    const assertionId = o.assertionId ?? `_a${randomBytes(16).toString('hex')}`;
    const inResponseTo = o.inResponseTo ? ` InResponseTo="${escape(o.inResponseTo)}"` : '';
    const attributes = Object.entries(o.attributes ?? {})
      .map(([name, value]) => `<saml:Attribute Name="${escape(name)}"><saml:AttributeValue>${escape(value)}</saml:AttributeValue></saml:Attribute>`)
      .join('');
    const assertion = `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${assertionId}" Version="2.0" IssueInstant="${iso(now)}"><saml:Issuer>${escape(issuer)}</saml:Issuer><saml:Subject><saml:NameID Format="${o.nameIdFormat ?? EMAIL_FORMAT}">${escape(o.nameId)}</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData${inResponseTo} NotOnOrAfter="${iso(now + (o.notOnOrAfter ?? 5 * 60_000))}" Recipient="${escape(o.recipient ?? o.acsUrl)}"/></saml:SubjectConfirmation></saml:Subject><saml:Conditions NotBefore="${iso(now + (o.notBefore ?? -60_000))}" NotOnOrAfter="${iso(now + (o.notOnOrAfter ?? 5 * 60_000))}"><saml:AudienceRestriction><saml:Audience>${escape(o.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions><saml:AuthnStatement AuthnInstant="${iso(now + (o.authnInstant ?? 0))}" SessionIndex="_s${randomBytes(8).toString('hex')}"><saml:AuthnContext><saml:AuthnContextClassRef>${escape(o.authnContextClassRef ?? 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport')}</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>${attributes ? `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` : ''}</saml:Assertion>`;
    const key = o.key ?? this.signing;
    const signedAssertion = (o.sign ?? 'assertion') === 'assertion' ? signAt(assertion, "/*[local-name(.)='Assertion']", key) : assertion;
    const destination = o.destination === null ? '' : ` Destination="${escape(o.destination ?? o.acsUrl)}"`;
    const response = `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_r${randomBytes(16).toString('hex')}" Version="2.0" IssueInstant="${iso(now)}"${destination}${inResponseTo}><saml:Issuer>${escape(issuer)}</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>${signedAssertion.replace(/^<\?xml[^>]*>/, '')}</samlp:Response>`;
    return o.sign === 'response' ? signAt(response, "/*[local-name(.)='Response']", key) : response;
  }

  /**
   * An XML signature-wrapping sample: the IdP's genuinely signed assertion (for `victim`) moved
   * into the Response's Extensions, where its signature still verifies, and an unsigned assertion
   * for `evil` put where an SP reads the assertion (the Response's child).
   */
  wrappedResponse(victim: ResponseOptions, evil: { nameId: string }): string {
    const genuine = this.responseXml({ ...victim, sign: 'assertion' });
    const signedAssertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(genuine)![0];
    const forged = this.responseXml({ ...victim, nameId: evil.nameId, sign: 'none' });
    const forgedAssertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(forged)![0];
    const wrapped = genuine.replace(signedAssertion, `<samlp:Extensions>${signedAssertion}</samlp:Extensions>${forgedAssertion}`);
    return Buffer.from(wrapped).toString('base64');
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private handle(path: string, res: import('node:http').ServerResponse): void {
    const url = new URL(path, this.url);
    if (url.pathname === '/metadata') {
      res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(this.metadataXml());
      return;
    }
    if (url.pathname !== '/sso') {
      res.writeHead(404).end();
      return;
    }
    const request = SamlIdp.authnRequestOf(url.href);
    this.requests.push(request);
    const { acsUrl, audience, ...rest } = this.next as Partial<ResponseOptions> & { nameId: string };
    const acs = acsUrl ?? request.acsUrl!;
    const samlResponse = this.response({ acsUrl: acs, audience: audience ?? request.issuer!, inResponseTo: request.id, ...rest });
    const relayState = url.searchParams.get('RelayState');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
      `<!doctype html><html><body><p>Signing you in…</p><form id="f" method="post" action="${escape(acs)}"><input type="hidden" name="SAMLResponse" value="${samlResponse}">${relayState ? `<input type="hidden" name="RelayState" value="${escape(relayState)}">` : ''}<noscript><button type="submit">Continue</button></noscript></form><script>document.getElementById('f').submit()</script></body></html>`,
    );
  }
}

/** `xml` with an enveloped signature over the element at `xpath` (RSA-SHA256, exclusive c14n), placed after its Issuer. */
function signAt(xml: string, xpath: string, key: SigningKey): string {
  const sig = new SignedXml({
    privateKey: key.key,
    publicCert: key.cert,
    signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  sig.addReference({ xpath, digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256', transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'] });
  sig.computeSignature(xml, { location: { reference: `${xpath}/*[local-name(.)='Issuer']`, action: 'after' } });
  return sig.getSignedXml();
}
