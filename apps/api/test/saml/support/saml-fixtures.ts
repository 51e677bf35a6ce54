import { AnonymousRefusals } from '../../../src/federation/anonymous-refusals.js';
import { OrganizationsService } from '../../../src/organizations/organizations.service.js';
import { request } from '../../support/http.js';
import { addMember, createOrganization, personWithToken } from '../../support/organization-fixtures.js';
import type { TestApp } from '../../support/test-app.js';
import { markDomainVerified, organizationId } from '../../support/verified-domain-fixtures.js';
import type { WebClient } from '../../support/web-client.js';
import { type ResponseOptions, SamlIdp } from './saml-idp.js';

let n = 0;

/** An organization with an owner and an admin (with `orgs` tokens), `domain` verified, and `idp` connected by its metadata through the API. */
export async function samlTeam(api: TestApp, idp: SamlIdp, policy: Record<string, unknown> = { allowSignUp: true }) {
  n += 1;
  const owner = await personWithToken(api);
  const admin = await personWithToken(api);
  const slug = await createOrganization(api, owner, `Saml Team ${n}`);
  await addMember(api, slug, owner.id, admin, 'admin');
  const orgId = await organizationId(api, slug, owner.id);
  const domain = `saml${n}-${Date.now().toString(36)}.test`;
  await markDomainVerified(api, orgId, domain);
  const call = (method: string, json?: unknown, token = admin.token) => request(api, method, `/api/orgs/${slug}/saml`, { token, json });
  const put = await call('PUT', { idpMetadataXml: idp.metadataXml() });
  if (put.status !== 200) throw new Error(`PUT saml: ${put.status} ${JSON.stringify(put.body)}`);
  if (Object.keys(policy).length) {
    const patched = await call('PATCH', policy);
    if (patched.status !== 200) throw new Error(`PATCH saml: ${patched.status} ${JSON.stringify(patched.body)}`);
  }
  const sp = put.body as { spEntityId: string; acsUrl: string; metadataUrl: string };
  return { owner, admin, slug, orgId, domain, call, sp, address: (name: string) => `${name}@${domain}` };
}

export type SamlTeam = Awaited<ReturnType<typeof samlTeam>>;

/** This browser starts a sign-in at /saml/{slug}/login: the AuthnRequest it is sent to the IdP with. */
export async function startSignIn(web: WebClient, slug: string, next = '/settings/account') {
  const res = await web.send('GET', `/saml/${slug}/login?next=${encodeURIComponent(next)}`);
  if (res.status !== 303 || !res.location) throw new Error(`start: ${res.status} ${res.text.slice(0, 300)}`);
  return { location: res.location, request: SamlIdp.authnRequestOf(res.location) };
}

/** The IdP's form posted to the ACS by this browser. */
export const postToAcs = (web: WebClient, slug: string, samlResponse: string) => web.send('POST', `/saml/${slug}/acs`, { SAMLResponse: samlResponse });

/** A good answer's options for this team's SP, for `nameId`, in answer to `inResponseTo`. */
export const answerFor = (team: SamlTeam, nameId: string, inResponseTo?: string, more: Partial<ResponseOptions> = {}): ResponseOptions => ({
  acsUrl: team.sp.acsUrl,
  audience: team.sp.spEntityId,
  nameId,
  ...(inResponseTo ? { inResponseTo } : {}),
  ...more,
});

/** The organization's log (counted refusals written first), oldest first. */
export async function orgLog(api: TestApp, orgId: string) {
  await api.app.get(AnonymousRefusals).flush();
  return (await api.app.get(OrganizationsService).log(orgId, 500, 0)).reverse();
}

/** The organization's refused sign-ins, oldest first: their reasons. */
export async function refusalsOf(api: TestApp, orgId: string): Promise<string[]> {
  return (await orgLog(api, orgId)).filter((e) => e.type === 'federation.login_refused').map((e) => String(e.detail.reason));
}

/*
 * SQL: what only the database shows of SAML's own tables and of a connection's sessions: the
 * browser sessions started through a provider's links (ended in the transaction that disables or
 * removes it), the replay cache's rows (which retention purges when their assertion expired,
 * moved into the past here instead of waiting for it), and whether a connection's row is gone.
 */

/** The browser sessions started through the provider's links. */
export async function linkedSessions(api: TestApp, providerId: string): Promise<number> {
  const [row] = await api.dataSource.query(
    `SELECT count(*)::int AS n FROM web_sessions s JOIN federated_identities l ON l.id = s.federated_link_id WHERE l.provider_id = $1`,
    [providerId],
  );
  return row.n;
}

/** How many uses of the IdP's assertions the replay cache holds. */
export async function assertionUses(api: TestApp, issuer: string): Promise<number> {
  const [row] = await api.dataSource.query(`SELECT count(*)::int AS n FROM saml_assertion_uses WHERE issuer = $1`, [issuer]);
  return row.n;
}

/** Moves the expiry of the IdP's assertion uses into the past, as time passing would. */
export async function expireAssertionUses(api: TestApp, issuer: string): Promise<void> {
  await api.dataSource.query(`UPDATE saml_assertion_uses SET expires_at = now() - interval '1 second' WHERE issuer = $1`, [issuer]);
}

/** Whether the organization has a saml_connections row. */
export async function hasConnectionRow(api: TestApp, orgId: string): Promise<boolean> {
  return (await api.dataSource.query(`SELECT 1 FROM saml_connections WHERE organization_id = $1`, [orgId])).length > 0;
}
