import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { type CacheProvider, type Profile, SAML, ValidateInResponseTo } from '@node-saml/node-saml';
import { DOMParser } from '@xmldom/xmldom';
import type { Response } from 'express';
import { Clock } from '../../common/clock.js';
import { sha256 } from '../../common/secrets.js';
import { AppConfig } from '../../config/app-config.js';
import { OrganizationsService } from '../../organizations/organizations.service.js';
import { FederationRefused, FederationSignIn, type SignInOutcome } from '../federation-sign-in.service.js';
import type { IdentityProviderRow } from '../identity-providers.repository.js';
import type { ProviderIdentity } from '../relying-party.js';
import { FLIGHT_SECONDS } from '../sign-in-flights.js';
import { SamlConnectionsRepository, type SamlConnectionRow } from './saml-connections.repository.js';
import { SamlConnectionsService, serviceProviderOf } from './saml-connections.service.js';
import { type SamlFlight, SamlFlights } from './saml-flights.js';

const ASSERTION_NS = 'urn:oasis:names:tc:SAML:2.0:assertion';
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
/** How far the IdP's clock may be from ours (NotBefore, NotOnOrAfter). */
export const CLOCK_SKEW_MS = 60_000;
/** A SAMLResponse longer than this is no sign-in's (they are a few kB). */
const MAX_RESPONSE_LENGTH = 200_000;
/** Where IdPs put the address when the NameID is not one (Okta and Google: `email`; Entra ID: its claim URI; LDAP's `mail`). */
const EMAIL_ATTRIBUTES = ['email', 'mail', 'urn:oid:0.9.2342.19200300.100.1.3', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress'];
const NAME_ATTRIBUTES = ['displayName', 'name', 'http://schemas.microsoft.com/identity/claims/displayname', 'urn:oid:2.16.840.1.113730.3.1.241'];

/** One generic sentence for the browser: the reason goes to the organization's log. */
const GENERIC = (idp: string) => `The sign-in from ${idp} could not be accepted. Please start again, or ask your organization’s administrators (they can see why in its security log).`;

/** What a checked SAML answer vouches for. */
export interface SamlAnswer {
  organization: { id: string; slug: string; name: string };
  /** The connection's provider row, with the organization's verified domains now as its domains (FederationSignIn trusts an address only inside them). */
  provider: IdentityProviderRow;
  identity: ProviderIdentity;
  /** Unsolicited (IdP-initiated): no flight matched. */
  flight: SamlFlight | null;
  /** For "Test sign-in": what was read, shown to the admin. */
  seen: { nameId: string; nameIdFormat: string | null; email: string | null; inVerifiedDomain: boolean; authnContextClassRef: string | null; assertionId: string };
}

/**
 * The service provider's side of SAML 2.0 sign-in per organization (issue #47), with
 * `@node-saml/node-saml` (which reads only the bytes a signature covers, and refuses more than one
 * assertion), configured for each answer:
 * - SP-initiated, HTTP-Redirect: an AuthnRequest whose ID is kept in this browser's sealed flight
 *   cookie (SamlFlights), which replaces node-saml's in-memory request cache: the Response's
 *   InResponseTo (and its SubjectConfirmationData's) must be that ID, within ten minutes;
 *   unsolicited responses only when the admin allowed IdP-initiated sign-in;
 * - a signature by one of the registered certificates over the Response or the Assertion
 *   (wantAuthnResponseSigned and wantAssertionsSigned both false means exactly that in node-saml:
 *   an unsigned response needs a signed assertion);
 * - Audience = the SP entity id, NotBefore/NotOnOrAfter within CLOCK_SKEW_MS (node-saml); the
 *   assertion's Issuer = the IdP's entityID, a bearer SubjectConfirmationData whose Recipient is
 *   the ACS and which expires, and the Response's Destination, when present, the ACS (here: node-saml
 *   does not check them);
 * - each assertion ID accepted once (saml_assertion_uses, one INSERT shared by the replicas);
 * - the address from an emailAddress NameID or a mail attribute; it counts only inside the
 *   organization's verified domains (FederationSignIn, as for its OpenID providers).
 */
@Injectable()
export class SamlSignIn {
  constructor(
    private readonly connections: SamlConnectionsService,
    private readonly uses: SamlConnectionsRepository,
    private readonly organizations: OrganizationsService,
    private readonly flights: SamlFlights,
    private readonly federation: FederationSignIn,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  /**
   * Where a checked answer leads, by FederationSignIn's rules (links by (entityID, NameID), the
   * pre-hijacking rules, the verified domains, allowSignUp). With `allowSignUp`, a person it signs
   * in who is not a member of the organization becomes one (the account made now, or one linked
   * before): the connection signs in the organization's own people.
   * @throws FederationRefused
   */
  async signIn(answer: SamlAnswer, ip: string | null): Promise<SignInOutcome> {
    const outcome = await this.federation.signIn(answer.provider, answer.identity, ip);
    if (outcome.kind === 'signed-in' && answer.provider.allowSignUp) {
      await this.organizations.addMemberNow(answer.organization.id, outcome.user.id, 'member', 'saml', ip);
    }
    return outcome;
  }

  /** The organization of `slug` and its enabled connection. @throws FederationRefused 404, 403 */
  async enabled(slug: string): Promise<{ organization: { id: string; slug: string; name: string }; connection: SamlConnectionRow }> {
    const organization = await this.organizations.bySlug(slug);
    const connection = organization && (await this.connections.find(organization.id));
    if (!organization || !connection) throw new FederationRefused('unknown provider', 'There is no such sign-in on this Prospect.', 404);
    if (connection.provider.disabledAt) {
      throw new FederationRefused('provider disabled', `Sign-in with ${connection.provider.displayName} is turned off. Ask your organization’s administrators.`, 403, null, false, organization.id);
    }
    return { organization, connection };
  }

  /** The SP's metadata XML (entity id, ACS with HTTP-POST, the NameID format asked for). @throws FederationRefused 404 */
  async metadata(slug: string): Promise<string> {
    const organization = await this.organizations.bySlug(slug);
    const connection = organization && (await this.connections.find(organization.id));
    if (!organization || !connection) throw new FederationRefused('unknown provider', 'There is no such sign-in on this Prospect.', 404);
    return this.saml(connection, organization.slug, ValidateInResponseTo.always, null).generateServiceProviderMetadata(null, null);
  }

  /**
   * Sends the browser to the IdP: an AuthnRequest (HTTP-Redirect) whose ID this browser's flight
   * cookie keeps; the URL to redirect to.
   * @throws FederationRefused
   */
  async begin(res: Response, slug: string, purpose: 'sign-in' | 'test' | 'sudo', options: { next: string; userId?: string; session?: string }): Promise<string> {
    const { organization, connection } = await this.enabled(slug);
    const requestId = `_${randomBytes(20).toString('hex')}`;
    // Sudo mode asks the IdP for a fresh sign-in (ForceAuthn), and its answer's AuthnInstant is checked.
    const saml = this.saml(connection, organization.slug, ValidateInResponseTo.always, null, requestId, purpose === 'sudo');
    const url = await saml.getAuthorizeUrlAsync('', undefined, {});
    const who = { ...(options.userId ? { userId: options.userId } : {}), ...(options.session ? { session: options.session } : {}) };
    this.flights.start(res, { slug: organization.slug, requestId, at: this.clock.now().getTime(), next: options.next, purpose, ...who });
    return url;
  }

  /**
   * Sudo mode through the person's SAML connection (`providerId`, one they are linked to): off to
   * the IdP for a fresh sign-in, which counts only in this session (`sessionId`).
   * @throws FederationRefused
   */
  async beginSudo(res: Response, providerId: string, options: { next: string; userId: string; sessionId: string }): Promise<string> {
    const organizationId = await this.uses.organizationOf(providerId);
    const org = organizationId && (await this.organizations.namesOf([organizationId])).get(organizationId);
    if (!org) throw new FederationRefused('unknown provider', 'There is no such sign-in on this Prospect.', 404);
    return this.begin(res, org.slug, 'sudo', { next: options.next, userId: options.userId, session: sha256(options.sessionId).toString('base64url') });
  }

  /** The provider and identity of sudo's checked answer (SamlFlight 'sudo-answer'), read again for the session that asked. @throws FederationRefused */
  async sudoAnswer(slug: string, flight: SamlFlight | null): Promise<{ provider: IdentityProviderRow; identity: ProviderIdentity; flight: SamlFlight }> {
    const { organization, connection } = await this.enabled(slug);
    if (!flight || flight.purpose !== 'sudo-answer' || flight.slug !== organization.slug || !flight.answer) {
      throw new FederationRefused('no sudo answer in this browser', 'This confirmation was not started in this browser, or took too long. Please confirm again.', 400, null, false, organization.id);
    }
    const { subject, email, acr } = flight.answer;
    const identity: ProviderIdentity = { issuer: connection.provider.issuer, subject, ...(email ? { email } : {}), emailVerified: email !== undefined, amr: [], ...(acr ? { acr } : {}) };
    return { provider: { ...connection.provider, emailDomains: await this.organizations.verifiedDomains(organization.id) }, identity, flight };
  }

  /**
   * The IdP's answer at the ACS, checked against the flight this browser started (or, when the
   * admin allowed it, none); the identity it vouches for. Every refusal names its reason for the
   * organization's log and says one generic sentence to the browser.
   * @throws FederationRefused
   */
  async answer(slug: string, flight: SamlFlight | null, samlResponse: string): Promise<SamlAnswer> {
    const { organization, connection } = await this.enabled(slug);
    const idp = connection.provider.displayName;
    const refuse = (reason: string) => new FederationRefused(reason, GENERIC(idp), 401, null, false, organization.id);
    if (!samlResponse || samlResponse.length > MAX_RESPONSE_LENGTH) throw refuse('no SAMLResponse, or one too long');
    const mine = flight && flight.slug === organization.slug ? flight : null;
    const sp = serviceProviderOf(this.config.publicUrl, organization.slug);
    const saml = this.saml(connection, organization.slug, connection.allowIdpInitiated ? ValidateInResponseTo.ifPresent : ValidateInResponseTo.always, mine);
    let profile: Profile | null;
    try {
      ({ profile } = await saml.validatePostResponseAsync({ SAMLResponse: samlResponse }));
    } catch (err) {
      throw refuse(`SAML response refused: ${reasonOf(err)}`);
    }
    if (!profile?.getAssertionXml) throw refuse('SAML response refused: no assertion');
    const assertion = readAssertion(profile.getAssertionXml());
    if (!assertion) throw refuse('SAML response refused: the signed assertion could not be read');
    if (assertion.issuer !== connection.provider.issuer) throw refuse(`SAML response refused: the assertion's Issuer is ${clip(assertion.issuer)}, not the IdP's entityID`);
    const destination = destinationOf(samlResponse);
    if (destination !== null && destination !== sp.acsUrl) throw refuse(`SAML response refused: its Destination is ${clip(destination)}, not this ACS`);
    const now = this.clock.now().getTime();
    const confirmation = assertion.confirmations.find((c) => c.recipient === sp.acsUrl && c.notOnOrAfter !== null && now - CLOCK_SKEW_MS < c.notOnOrAfter);
    if (!confirmation) throw refuse('SAML response refused: no bearer SubjectConfirmationData whose Recipient is this ACS, unexpired');
    if (profile.inResponseTo === undefined && !connection.allowIdpInitiated) throw refuse('SAML response refused: unsolicited, and IdP-initiated sign-in is off');
    const nameId = profile.nameID;
    if (!nameId) throw refuse('SAML response refused: no NameID');
    // Sudo mode: a sign-in at the IdP since this browser asked (ForceAuthn), not one remembered from before.
    if (mine?.purpose === 'sudo' && (assertion.authnInstant === null || assertion.authnInstant < mine.at - CLOCK_SKEW_MS)) {
      throw refuse('SAML response refused: sudo mode asked for a fresh sign-in, and the AuthnInstant is older than the request');
    }
    const expiresAt = Math.max(confirmation.notOnOrAfter!, assertion.notOnOrAfter ?? 0) + CLOCK_SKEW_MS;
    if (!(await this.uses.useAssertion(connection.provider.issuer, assertion.id, new Date(now), new Date(expiresAt)))) {
      throw refuse(`SAML response refused: assertion ${clip(assertion.id)} was used already (a replay)`);
    }
    const email = addressOf(profile);
    const identity: ProviderIdentity = {
      issuer: connection.provider.issuer,
      subject: nameId,
      ...(email ? { email: email.toLowerCase() } : {}),
      // The IdP vouches for the address it asserts; it counts only inside the organization's verified domains.
      emailVerified: email !== undefined,
      ...(attribute(profile, NAME_ATTRIBUTES) ? { name: attribute(profile, NAME_ATTRIBUTES) } : {}),
      amr: [],
      ...(assertion.authnContextClassRef ? { acr: assertion.authnContextClassRef } : {}),
    };
    const provider = { ...connection.provider, emailDomains: await this.organizations.verifiedDomains(organization.id) };
    const inVerifiedDomain = email !== undefined && provider.emailDomains.includes(email.slice(email.lastIndexOf('@') + 1).toLowerCase());
    return {
      organization,
      provider,
      identity,
      flight: mine,
      seen: { nameId, nameIdFormat: profile.nameIDFormat ?? null, email: email ?? null, inVerifiedDomain, authnContextClassRef: assertion.authnContextClassRef, assertionId: assertion.id },
    };
  }

  /**
   * node-saml for one request. Its request-id cache is this browser's flight: `getAsync` knows
   * only the flight's ID (ten minutes from when it left), and nothing is stored.
   */
  private saml(connection: SamlConnectionRow, slug: string, validateInResponseTo: ValidateInResponseTo, flight: SamlFlight | null, requestId?: string, forceAuthn = false): SAML {
    const sp = serviceProviderOf(this.config.publicUrl, slug);
    const cacheProvider: CacheProvider = {
      saveAsync: async (_key, value) => ({ value, createdAt: Date.now() }),
      getAsync: async (key) => (flight && key === flight.requestId ? new Date(flight.at).toISOString() : null),
      removeAsync: async () => null,
    };
    return new SAML({
      callbackUrl: sp.acsUrl,
      entryPoint: connection.ssoUrl,
      issuer: sp.spEntityId,
      audience: sp.spEntityId,
      idpCert: connection.certificates,
      wantAuthnResponseSigned: false,
      wantAssertionsSigned: false,
      acceptedClockSkewMs: CLOCK_SKEW_MS,
      validateInResponseTo,
      requestIdExpirationPeriodMs: FLIGHT_SECONDS * 1000,
      cacheProvider,
      identifierFormat: EMAIL_FORMAT,
      // No RequestedAuthnContext: asking for PasswordProtectedTransport exactly (node-saml's default) makes IdPs refuse a sign-in with a second factor.
      disableRequestedAuthnContext: true,
      forceAuthn,
      ...(requestId ? { generateUniqueId: () => requestId } : {}),
    });
  }
}

interface ReadAssertion {
  id: string;
  issuer: string;
  notOnOrAfter: number | null;
  confirmations: Array<{ recipient: string | null; notOnOrAfter: number | null }>;
  authnContextClassRef: string | null;
  authnInstant: number | null;
}

/** What Prospect reads of the signed assertion's XML (node-saml handed over only the signed bytes). */
function readAssertion(xml: string): ReadAssertion | null {
  const doc = new DOMParser({ errorHandler: { warning: () => undefined, error: () => undefined, fatalError: () => undefined } }).parseFromString(xml, 'text/xml');
  const root = doc?.documentElement;
  if (!root || root.localName !== 'Assertion' || root.namespaceURI !== ASSERTION_NS) return null;
  const id = root.getAttribute('ID');
  const child = (parent: Element, name: string) => Array.from(parent.childNodes).find((n): n is Element => n.nodeType === 1 && (n as Element).localName === name && (n as Element).namespaceURI === ASSERTION_NS);
  const issuer = child(root, 'Issuer')?.textContent?.trim();
  if (!id || !issuer) return null;
  const time = (value: string | null | undefined) => (value && !Number.isNaN(Date.parse(value)) ? Date.parse(value) : null);
  const conditions = child(root, 'Conditions');
  const subject = child(root, 'Subject');
  const confirmations = subject
    ? Array.from(subject.childNodes)
        .filter((n): n is Element => n.nodeType === 1 && (n as Element).localName === 'SubjectConfirmation' && (n as Element).getAttribute('Method') === 'urn:oasis:names:tc:SAML:2.0:cm:bearer')
        .map((c) => child(c, 'SubjectConfirmationData'))
        .filter((d): d is Element => d !== undefined)
        .map((d) => ({ recipient: d.getAttribute('Recipient'), notOnOrAfter: time(d.getAttribute('NotOnOrAfter')) }))
    : [];
  const statement = child(root, 'AuthnStatement');
  const context = statement && child(statement, 'AuthnContext');
  const classRef = context && child(context, 'AuthnContextClassRef')?.textContent?.trim();
  return { id, issuer, notOnOrAfter: time(conditions?.getAttribute('NotOnOrAfter')), confirmations, authnContextClassRef: classRef || null, authnInstant: time(statement?.getAttribute('AuthnInstant')) };
}

/** The Response's Destination attribute (null when absent or unreadable). */
function destinationOf(samlResponse: string): string | null {
  const xml = Buffer.from(samlResponse, 'base64').toString('utf8');
  const doc = new DOMParser({ errorHandler: { warning: () => undefined, error: () => undefined, fatalError: () => undefined } }).parseFromString(xml, 'text/xml');
  return doc?.documentElement?.getAttribute('Destination') || null;
}

/** The address: an emailAddress NameID, else the first mail attribute. */
function addressOf(profile: Profile): string | undefined {
  if (profile.nameIDFormat === EMAIL_FORMAT && profile.nameID?.includes('@')) return profile.nameID.trim();
  return attribute(profile, EMAIL_ATTRIBUTES);
}

function attribute(profile: Profile, names: string[]): string | undefined {
  const attributes = (profile.attributes ?? {}) as Record<string, unknown>;
  for (const name of names) {
    const value = attributes[name];
    const text = Array.isArray(value) ? value[0] : value;
    if (typeof text === 'string' && text.trim()) return text.trim();
  }
  return undefined;
}

function reasonOf(err: unknown): string {
  return clip(err instanceof Error ? err.message : String(err), 300);
}

function clip(text: string, max = 120): string {
  const oneLine = text.replace(/\s+/g, ' ');
  return oneLine.length > max ? `${oneLine.slice(0, max)}…` : oneLine;
}
