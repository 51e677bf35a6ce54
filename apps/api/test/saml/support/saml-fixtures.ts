import { AnonymousRefusals } from '../../../src/federation/anonymous-refusals.js';
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

/** The organization's refused sign-ins (counted ones written now), newest last: their reasons. */
export async function refusalsOf(api: TestApp, orgId: string): Promise<string[]> {
  await api.app.get(AnonymousRefusals).flush();
  const rows: Array<{ reason: string }> = await api.dataSource.query(
    `SELECT detail ->> 'reason' AS reason FROM auth_events WHERE organization_id = $1 AND type = 'federation.login_refused' ORDER BY id`,
    [orgId],
  );
  return rows.map((r) => r.reason);
}
