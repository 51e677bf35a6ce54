import { AnonymousRefusals } from '../../../src/federation/anonymous-refusals.js';
import { OrganizationsService } from '../../../src/organizations/organizations.service.js';
import { request } from '../../support/http.js';
import { addMember, createOrganization, personWithToken } from '../../support/organization-fixtures.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { markDomainVerified, organizationId } from '../../support/verified-domain-fixtures.js';
import { webClient, type WebClient } from '../../support/web-client.js';
import { type ResponseOptions, SamlIdp } from './saml-idp.js';

let n = 0;

/** An organization with an owner and an admin (with `orgs` tokens), and `domain` verified. */
export async function verifiedTeam(api: TestApp, name: string, domain: string) {
  const owner = await personWithToken(api);
  const admin = await personWithToken(api);
  const slug = await createOrganization(api, owner, name);
  await addMember(api, slug, owner.id, admin, 'admin');
  const orgId = await organizationId(api, slug, owner.id);
  await markDomainVerified(api, orgId, domain);
  return { owner, admin, slug, orgId, domain };
}

/** A `verifiedTeam` of a domain of its own, with `idp` connected by its metadata through the API. */
export async function samlTeam(api: TestApp, idp: SamlIdp, policy: Record<string, unknown> = { allowSignUp: true }) {
  n += 1;
  const team = await verifiedTeam(api, `Saml Team ${n}`, `saml${n}-${Date.now().toString(36)}.test`);
  const call = (method: string, json?: unknown, token = team.admin.token) => request(api, method, `/api/orgs/${team.slug}/saml`, { token, json });
  const put = await call('PUT', { idpMetadataXml: idp.metadataXml() });
  if (put.status !== 200) throw new Error(`PUT saml: ${put.status} ${JSON.stringify(put.body)}`);
  if (Object.keys(policy).length) {
    const patched = await call('PATCH', policy);
    if (patched.status !== 200) throw new Error(`PATCH saml: ${patched.status} ${JSON.stringify(patched.body)}`);
  }
  const sp = put.body as { spEntityId: string; acsUrl: string; metadataUrl: string };
  return { ...team, call, sp, address: (name: string) => `${name}@${team.domain}` };
}

export type SamlTeam = Awaited<ReturnType<typeof samlTeam>>;

/**
 * What the sign-in specs share: the app, started in the spec's `beforeAll` (`start`) and closed
 * with every IdP it started in its `afterAll` (`close`); a team with an IdP of its own (an
 * entityID is one organization's); a sign-in answered; a refusal checked. Arrow functions, so a
 * spec takes them apart (`const { team } = saml`).
 */
export class SamlSpec {
  api!: TestApp;
  private readonly idps: SamlIdp[] = [];

  start = async (): Promise<TestApp> => (this.api = await startTestApp());

  close = async (): Promise<void> => {
    await Promise.all(this.idps.map((idp) => idp.close()));
    await this.api?.close();
  };

  newIdp = async (): Promise<SamlIdp> => {
    const idp = await SamlIdp.start();
    this.idps.push(idp);
    return idp;
  };

  team = async (policy?: Record<string, unknown>): Promise<{ t: SamlTeam; idp: SamlIdp }> => {
    const idp = await this.newIdp();
    return { t: await samlTeam(this.api, idp, policy), idp };
  };

  /** Starts a sign-in in a new browser (or `web`) and posts the IdP's answer made by `make` (given the request's ID); the ACS's answer. */
  answerWith = async (t: SamlTeam, make: (requestId: string) => string, web: WebClient = webClient(this.api)) => {
    const { request } = await startSignIn(web, t.slug);
    return { res: await postToAcs(web, t.slug, make(request.id)), web };
  };

  /** A refusal: the generic page (no reason on it), nobody signed in, and `reason` in the organization's log. */
  expectRefused = async (t: SamlTeam, answer: { res: { status: number; text: string }; web: WebClient }, reason: RegExp): Promise<void> => {
    expect(answer.res.status).toBe(401);
    expect(answer.res.text).toContain('could not be accepted');
    expect(answer.res.text).not.toMatch(/signature|audience|InResponseTo/i);
    expect(await signedInAs(answer.web)).toBeNull();
    expect((await refusalsOf(this.api, t.orgId)).at(-1)).toMatch(reason);
  };
}

/** Whose account page this browser sees (the address it shows), or null when it is signed out. */
export async function signedInAs(web: WebClient): Promise<string | null> {
  const page = await web.send('GET', '/settings/account');
  return page.status === 200 ? (/[\w.+-]+@[\w.-]+\.test/.exec(page.text)?.[0] ?? 'an address not of a test domain') : null;
}

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
